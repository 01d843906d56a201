import { Registry } from 'prom-client';
import { createTestNamespace, deleteNamespace, eventually, testKubeConfig } from '@sandbox-scale/e2e';
import {
  ConfigMapResource,
  Informer,
  KubeListWatcher,
  ResourceClient,
  WatchFailedError,
  createInformer,
  parseUntyped,
  type ListWatcher,
  type UntypedObject,
  type WatchRequest,
} from '../src/index';
import { captureLog } from '../src/testing';
import { type Gizmo, GizmoResource, GizmoSchema, KnobResource, installTestCrds } from './kube-fixtures';

const kc = testKubeConfig();
const fast = { backoff: { baseMs: 50, maxMs: 500 } };
let ns: string;
const stoppers: Array<() => Promise<void>> = [];

beforeAll(async () => {
  ns = await createTestNamespace(kc, 'kr-informer');
  await installTestCrds(kc);
});
afterEach(async () => {
  await Promise.all(stoppers.splice(0).map((s) => s()));
});
afterAll(async () => {
  await deleteNamespace(kc, ns);
});

function recordEvents<T extends UntypedObject | Gizmo>(informer: Informer<T>): string[] {
  const events: string[] = [];
  informer.on({
    add: (o) => events.push(`add ${o.metadata.name}`),
    update: (o) => events.push(`update ${o.metadata.name}`),
    delete: (o) => events.push(`delete ${o.metadata.name}`),
    malformed: (ref, f) => events.push(`malformed ${ref.name} ${f?.fieldPath ?? 'gone'}`),
  });
  return events;
}

function started<T extends UntypedObject | Gizmo>(informer: Informer<T>): Informer<T> {
  informer.start();
  stoppers.push(() => informer.stop());
  return informer;
}

const cms = new ResourceClient(kc, ConfigMapResource);
const cm = (name: string, data: Record<string, string>): object => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: ns },
  data,
});

describe('Informer against a real API server', () => {
  it('sees add, update and delete of ConfigMaps in one namespace', async () => {
    await cms.create(ns, cm('before', { a: '1' }));
    const informer = started(
      createInformer(kc, { resource: ConfigMapResource, namespace: ns, parse: parseUntyped, log: captureLog().log, ...fast }),
    );
    const events = recordEvents(informer);
    await informer.waitForSync();
    // The list is read at resourceVersion=0 (the watch cache, as client-go's informers read it), which
    // may trail a create made just before: 'before' comes in the list or in the watch's first event.
    await eventually(() => expect(informer.get(ns, 'before')?.metadata.name).toBe('before'), { timeoutMs: 10_000 });
    expect(informer.lastSyncResourceVersion).toMatch(/^\d+$/);

    await cms.create(ns, cm('x', { a: '1' }));
    await eventually(() => expect(informer.get(ns, 'x')).toBeDefined(), { timeoutMs: 10_000 });
    await cms.mergePatch(ns, 'x', { data: { a: '2' } });
    await eventually(() => expect(informer.get(ns, 'x')?.data).toEqual({ a: '2' }), { timeoutMs: 10_000 });
    await cms.delete(ns, 'x');
    await eventually(() => expect(informer.get(ns, 'x')).toBeUndefined(), { timeoutMs: 10_000 });
    expect(events.filter((e) => e.endsWith(' x'))).toEqual(['add x', 'update x', 'delete x']);
  });

  it('caches typed custom resources, and skips a malformed one without stopping', async () => {
    const gizmos = new ResourceClient(kc, GizmoResource);
    const gizmo = (name: string, spec: object): object => ({
      apiVersion: GizmoResource.group + '/v1',
      kind: 'Gizmo',
      metadata: { name, namespace: ns },
      spec,
    });
    await gizmos.create(ns, gizmo('good', { size: 3 }));
    await gizmos.create(ns, gizmo('bad', { size: 'large' }));
    const { log, lines } = captureLog();
    const registry = new Registry();
    const informer = started(createInformer(kc, { resource: GizmoResource, parse: (o) => GizmoSchema.parse(o), log, registry, ...fast }));
    const events = recordEvents(informer);
    await informer.waitForSync();
    // Either object may come in the first watch events rather than the list (read at resourceVersion=0).
    await eventually(
      () => {
        expect(informer.get(ns, 'good')?.spec.size).toBe(3);
        expect(informer.malformedObject(ns, 'bad')?.fieldPath).toBe('spec.size');
      },
      { timeoutMs: 10_000 },
    );
    expect(informer.get(ns, 'bad')).toBeUndefined();
    const logged = lines.filter((l) => l.msg === 'malformed object skipped');
    expect(logged).toEqual([expect.objectContaining({ name: 'bad', namespace: ns, fieldPath: 'spec.size' })]);

    await gizmos.mergePatch(ns, 'good', { spec: { size: 4 } });
    await eventually(() => expect(informer.get(ns, 'good')?.spec.size).toBe(4), { timeoutMs: 10_000 });
    await gizmos.mergePatch(ns, 'bad', { spec: { size: 1 } });
    await eventually(() => expect(informer.get(ns, 'bad')?.spec.size).toBe(1), { timeoutMs: 10_000 });
    expect(informer.malformedObject(ns, 'bad')).toBeUndefined();
    // The list comes back sorted by name (and either may come in the watch instead), so the first two arrive in either order.
    expect(events.slice(0, 2).sort()).toEqual(['add good', 'malformed bad spec.size']);
    expect(events.slice(2)).toEqual(['update good', 'add bad']);
    expect(await registry.getSingleMetricAsString('sandbox_scale_informer_malformed_objects_total')).toContain(' 1');
  });

  it('caches cluster-scoped custom resources', async () => {
    const knobs = new ResourceClient(kc, KnobResource);
    const name = `${ns}-knob`;
    const informer = started(createInformer(kc, { resource: KnobResource, parse: parseUntyped, log: captureLog().log, ...fast }));
    await informer.waitForSync();
    await knobs.create(undefined, { apiVersion: `${KnobResource.group}/v1`, kind: 'Knob', metadata: { name }, spec: {} });
    await eventually(() => expect(informer.get(undefined, name)).toBeDefined(), { timeoutMs: 10_000 });
    expect(informer.get('any-namespace', name)).toBeDefined();
    await knobs.delete(undefined, name);
    await eventually(() => expect(informer.get(undefined, name)).toBeUndefined(), { timeoutMs: 10_000 });
  });

  it('restarts a failed watch from the last resourceVersion, without replaying or missing events', async () => {
    const real = new KubeListWatcher(kc, ConfigMapResource, { namespace: ns });
    let failed = false;
    // Breaks the first watch after its first event, as a dropped connection would.
    const flaky: ListWatcher = {
      list: (s) => real.list(s),
      watch: async (req: WatchRequest) => {
        if (failed) return real.watch(req);
        const ac = new AbortController();
        const stop = (): void => ac.abort();
        req.signal.addEventListener('abort', stop, { once: true });
        let sawEvent = false;
        await real.watch({
          ...req,
          signal: ac.signal,
          onEvent: (t, o) => {
            req.onEvent(t, o);
            if (t !== 'BOOKMARK') {
              sawEvent = true;
              ac.abort();
            }
          },
        });
        if (!sawEvent) return 'ended';
        failed = true;
        throw new WatchFailedError('connection reset (simulated)', undefined);
      },
    };
    const registry = new Registry();
    const informer = started(
      new Informer({
        resource: ConfigMapResource,
        namespace: ns,
        parse: parseUntyped,
        log: captureLog().log,
        listWatcher: flaky,
        registry,
        ...fast,
      }),
    );
    const events = recordEvents(informer);
    await informer.waitForSync();
    await cms.create(ns, cm('r1', {}));
    await eventually(() => expect(failed).toBe(true), { timeoutMs: 10_000 });
    await cms.create(ns, cm('r2', {}));
    await eventually(() => expect(informer.get(ns, 'r2')).toBeDefined(), { timeoutMs: 10_000 });
    expect(events.filter((e) => /r\d$/.test(e))).toEqual(['add r1', 'add r2']);
    expect(await registry.getSingleMetricAsString('sandbox_scale_informer_watch_restarts_total')).toContain('reason="error"} 1');
  });
});
