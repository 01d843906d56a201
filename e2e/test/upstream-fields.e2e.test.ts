import { ApiException, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { kubeApiClient } from '@sandbox-scale/kube-runtime';
import { NodeInfoSchema } from '@sandbox-scale/sandboxd-client';
import { eventually, kubectl, runSuffix } from '../src/index';
import { startSuiteSystem } from '../src/system/suite-system';
import type { SystemUnderTest } from '../src/system/system-under-test';
import { clearSimFaults, sandboxdCall, sandboxdRows, setSimFaults } from '../src/testing/sandboxd';
import { grantEditRole } from '../src/testing/tenant-role';

// Upstream agent-sandbox fields a microVM cannot act on as upstream does are honoured or refused,
// never silently dropped: a claim says so in Ready=False (upstream's reason where it has one) and
// an event before any VM is claimed; a pool whose template asks for what a microVM does not do
// says so in a condition and warms nothing for it; a Sandbox create gets a 422 naming the field;
// default and empty values pass; pod template fields a microVM does not use come back as a
// Warning header on a Sandbox create and as a Warning event on the pool. A namespace editor (the
// chart's edit role) does everything, as a tenant would.

const suffix = runSuffix();
const ns = `uf-${suffix}`;
const EXT = { group: 'extensions.agents.x-k8s.io', version: 'v1beta1' };
const SANDBOXES = { group: 'agents.x-k8s.io', version: 'v1beta1', plural: 'sandboxes' };
const IMAGE = `ghcr.io/example/fields-${suffix}:1`;
const RESOURCES = { requests: { cpu: '1', memory: '1Gi' } };

let sys: SystemUnderTest;
let editor = '';

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}
interface Claim {
  status?: { conditions?: Condition[]; sandbox?: { name?: string } };
}
interface PoolKeyRecord {
  template: string;
  net?: string;
  size?: string;
}
interface Pool {
  status?: { readyReplicas?: number; conditions?: Condition[]; poolKey?: PoolKeyRecord; retiringPoolKey?: PoolKeyRecord };
}

const as = async (args: string[], input?: string): Promise<string> => {
  const r = await kubectl(args, { kubeconfig: editor, input });
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
};
const apply = (items: object[]): Promise<string> => as(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));

const template = (name: string, spec: Record<string, unknown> = {}, image = IMAGE): object => ({
  apiVersion: `${EXT.group}/${EXT.version}`,
  kind: 'SandboxTemplate',
  metadata: { name, namespace: ns },
  spec: { podTemplate: { spec: { containers: [{ name: 'agent', image, resources: RESOURCES }] } }, ...spec },
});
const pool = (name: string, replicas: number, spec: Record<string, unknown> = {}): object => ({
  apiVersion: `${EXT.group}/${EXT.version}`,
  kind: 'SandboxWarmPool',
  metadata: { name, namespace: ns },
  spec: { replicas, sandboxTemplateRef: { name }, ...spec },
});
const claim = (name: string, poolName: string, spec: Record<string, unknown> = {}): object => ({
  apiVersion: `${EXT.group}/${EXT.version}`,
  kind: 'SandboxClaim',
  metadata: { name, namespace: ns },
  spec: { warmPoolRef: { name: poolName }, ...spec },
});

const custom = (): CustomObjectsApi => kubeApiClient(sys.kubeConfig, CustomObjectsApi);
const readClaim = async (name: string): Promise<Claim> =>
  (await custom().getNamespacedCustomObject({ ...EXT, namespace: ns, plural: 'sandboxclaims', name })) as Claim;
const readPool = async (name: string): Promise<Pool> =>
  (await custom().getNamespacedCustomObject({ ...EXT, namespace: ns, plural: 'sandboxwarmpools', name })) as Pool;
const conditionOf = (conds: Condition[] | undefined, type: string): Condition | undefined => conds?.find((c) => c.type === type);

/** Waits for the claim's Ready condition to have this status and reason; returns it. */
async function claimReady(name: string, status: string, reason?: string): Promise<Condition> {
  return eventually(
    async () => {
      const c = conditionOf((await readClaim(name)).status?.conditions, 'Ready');
      if (c?.status !== status || (reason !== undefined && c.reason !== reason))
        throw new Error(`claim ${name} Ready: ${JSON.stringify(c)}`);
      return c;
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
}

/** Waits for the pool's condition to have this status and reason; returns it. */
async function poolCondition(name: string, type: string, status: string, reason: string): Promise<Condition> {
  return eventually(
    async () => {
      const c = conditionOf((await readPool(name)).status?.conditions, type);
      if (c?.status !== status || c.reason !== reason) throw new Error(`pool ${name} ${type}: ${JSON.stringify(c)}`);
      return c;
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
}

/** Messages of the events of one object with this reason. */
async function eventNotes(name: string, reason: string): Promise<string[]> {
  const list = await kubeApiClient(sys.kubeConfig, CoreV1Api).listNamespacedEvent({
    namespace: ns,
    fieldSelector: `involvedObject.name=${name}`,
  });
  return list.items.filter((e) => e.reason === reason).map((e) => e.message ?? '');
}

/** Sandboxes the nodes hold for `name` of this suite's namespace (a claim or a Sandbox of that name). */
async function heldFor(name: string): Promise<number> {
  let n = 0;
  for (const node of sys.nodes) n += (await sandboxdRows(node)).filter((r) => r.claim_ref?.endsWith(`:${ns}/${name}`)).length;
  return n;
}

/** Target and warm count the nodes report for a pool key of this image (net none, size small). */
async function onNodes(image: string): Promise<{ target: number; warm: number }> {
  const out = { target: 0, warm: 0 };
  for (const node of sys.nodes) {
    const res = await sandboxdCall(node, '/v1/info');
    if (res.status !== 200) throw new Error(`GET ${node.url}/v1/info: ${res.status}`);
    for (const p of NodeInfoSchema.parse(await res.json()).pools)
      if (p.key.template === image) {
        out.target += p.target;
        out.warm += p.warm;
      }
  }
  return out;
}

/** A Sandbox create through kube-apiserver (the aggregated API) as the admin; the Status of a refusal. */
async function createSandbox(name: string, spec: Record<string, unknown>): Promise<{ code: number; body: Record<string, unknown> }> {
  const body = {
    apiVersion: 'agents.x-k8s.io/v1beta1',
    kind: 'Sandbox',
    metadata: { name, namespace: ns },
    spec: { podTemplate: { spec: { containers: [{ name: 'agent', image: IMAGE, resources: RESOURCES }] } }, ...spec },
  };
  try {
    const created = (await custom().createNamespacedCustomObject({ ...SANDBOXES, namespace: ns, body })) as Record<string, unknown>;
    return { code: 201, body: created };
  } catch (err) {
    if (!(err instanceof ApiException)) throw err;
    return { code: err.code, body: JSON.parse(String(err.body)) as Record<string, unknown> };
  }
}

const inAnHour = (): string => new Date(Date.now() + 3600_000).toISOString().replace(/\.\d+Z$/, 'Z');

beforeAll(async () => {
  sys = await startSuiteSystem({ namespaces: [ns], local: { nodes: 2, speed: 0, publishInterval: '1s' } });
  editor = (await sys.tenant(ns, 'editor')).path;
  await grantEditRole(sys.kubeConfig, ns, 'editor');
  // the base pool: every default spelled out, and pod template fields a microVM does not use
  const base = template('agent', {
    service: false,
    volumeClaimTemplates: [],
    networkPolicyManagement: 'Managed',
    envVarsInjectionPolicy: 'Disallowed',
    volumeClaimTemplatesPolicy: 'Disallowed',
  }) as { spec: { podTemplate: { spec: Record<string, unknown> } } };
  base.spec.podTemplate.spec['runtimeClassName'] = 'gvisor';
  // a template that allows claim env and volumes (they are refused all the same)
  const allowing = template('allowing', { envVarsInjectionPolicy: 'Allowed', volumeClaimTemplatesPolicy: 'Overrides' });
  await eventually(() => apply([base, pool('agent', 4, { updateStrategy: { type: 'OnReplenish' } }), allowing, pool('allowing', 1)]), {
    timeoutMs: 60_000,
    intervalMs: 500,
  });
  await poolCondition('agent', 'Ready', 'True', 'PoolWarm');
}, 300_000);

afterAll(async () => {
  if (sys) {
    for (const node of sys.nodes) await clearSimFaults(node).catch(() => undefined);
    await custom()
      .deleteCollectionNamespacedCustomObject({ ...EXT, namespace: ns, plural: 'sandboxclaims' })
      .catch(() => undefined);
    await custom()
      .deleteCollectionNamespacedCustomObject({ ...EXT, namespace: ns, plural: 'sandboxwarmpools' })
      .catch(() => undefined);
  }
  await sys?.stop();
}, 120_000);

describe('SandboxClaim fields a microVM cannot take are refused before any VM is claimed', () => {
  const env = [{ name: 'GREETING', value: 'hello' }];
  const volumes = [{ metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }];
  const cases: { name: string; pool: string; spec: Record<string, unknown>; reason: string; field: string }[] = [
    { name: 'env-disallowed', pool: 'agent', spec: { env }, reason: 'EnvVarsInjectionRejected', field: 'spec.env' },
    { name: 'env-allowed', pool: 'allowing', spec: { env }, reason: 'InvalidSpec', field: 'spec.env' },
    {
      name: 'vct-disallowed',
      pool: 'agent',
      spec: { volumeClaimTemplates: volumes },
      reason: 'VolumeClaimTemplatesError',
      field: 'spec.volumeClaimTemplates',
    },
    {
      name: 'vct-allowed',
      pool: 'allowing',
      spec: { volumeClaimTemplates: volumes },
      reason: 'InvalidSpec',
      field: 'spec.volumeClaimTemplates',
    },
    {
      name: 'pod-metadata',
      pool: 'agent',
      spec: { additionalPodMetadata: { labels: { team: 'blue' } } },
      reason: 'InvalidMetadata',
      field: 'spec.additionalPodMetadata',
    },
  ];

  it.each(cases)('$name: Ready=False $reason naming $field, an event, and no VM', async (c) => {
    await apply([claim(c.name, c.pool, c.spec)]);
    const ready = await claimReady(c.name, 'False', c.reason);
    expect(ready.message).toContain(`${c.field}:`);
    const bound = conditionOf((await readClaim(c.name)).status?.conditions, 'Bound');
    expect(bound).toMatchObject({ status: 'False', reason: c.reason });
    expect((await readClaim(c.name)).status?.sandbox?.name).toBeUndefined();
    await eventually(async () => expect((await eventNotes(c.name, c.reason)).some((n) => n.includes(c.field))).toBe(true), {
      timeoutMs: 30_000,
      intervalMs: 500,
    });
    expect(await heldFor(c.name)).toBe(0);
  });

  it('binds a claim whose fields are all defaults or empty', async () => {
    await apply([
      claim('defaults', 'agent', {
        env: [],
        volumeClaimTemplates: [],
        additionalPodMetadata: { labels: {}, annotations: {} },
        lifecycle: { shutdownPolicy: 'Delete' },
      }),
    ]);
    await claimReady('defaults', 'True');
    expect(await heldFor('defaults')).toBe(1);
  });
});

describe('SandboxTemplate fields a microVM cannot act on', () => {
  const cases: { name: string; spec: Record<string, unknown>; field: string }[] = [
    { name: 'netpol', spec: { networkPolicy: { ingress: [] } }, field: 'spec.networkPolicy' },
    { name: 'service', spec: { service: true }, field: 'spec.service' },
    { name: 'volumes', spec: { volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: {} }] }, field: 'spec.volumeClaimTemplates' },
  ];

  it.each(cases)('$field: the pool is Degraded InvalidSpec naming it, warms nothing, and its claims are refused', async (c) => {
    const image = `ghcr.io/example/fields-${c.name}-${suffix}:1`;
    await apply([template(c.name, c.spec, image), pool(c.name, 2)]);
    const degraded = await poolCondition(c.name, 'Degraded', 'True', 'InvalidSpec');
    expect(degraded.message).toContain(`SandboxTemplate "${c.name}" ${c.field}:`);
    await eventually(async () => expect((await eventNotes(c.name, 'InvalidSpec')).some((n) => n.includes(c.field))).toBe(true), {
      timeoutMs: 30_000,
      intervalMs: 500,
    });
    expect(await onNodes(image)).toEqual({ target: 0, warm: 0 });
    expect((await readPool(c.name)).status?.poolKey).toBeUndefined();

    await apply([claim(`${c.name}-claim`, c.name)]);
    const ready = await claimReady(`${c.name}-claim`, 'False', 'InvalidSpec');
    expect(ready.message).toContain(`spec.warmPoolRef.name: SandboxTemplate "${c.name}" of pool "${c.name}": ${c.field}:`);
    expect(await heldFor(`${c.name}-claim`)).toBe(0);
  });

  it('honours networkPolicyManagement Unmanaged: networkPolicy is then ignored, as upstream, and the pool fills', async () => {
    const image = `ghcr.io/example/fields-unmanaged-${suffix}:1`;
    await apply([
      template('unmanaged', { networkPolicy: { ingress: [] }, networkPolicyManagement: 'Unmanaged' }, image),
      pool('unmanaged', 1),
    ]);
    await poolCondition('unmanaged', 'Ready', 'True', 'PoolWarm');
    expect(conditionOf((await readPool('unmanaged')).status?.conditions, 'Degraded')).toMatchObject({ status: 'False' });
    expect((await onNodes(image)).warm).toBe(1);
  });

  it('names the pod template fields a microVM does not use in a Warning event on the pool', async () => {
    await eventually(
      async () => {
        const notes = await eventNotes('agent', 'PodTemplateFieldsIgnored');
        expect(notes.some((n) => n.includes('SandboxTemplate "agent"') && n.includes('spec.podTemplate.spec.runtimeClassName'))).toBe(true);
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
  });
});

describe('SandboxWarmPool spec.updateStrategy', () => {
  it('Recreate drains the old pool key at once; OnReplenish (the default) keeps it until the new key is warm', async () => {
    const before = { recreate: `ghcr.io/example/fields-recreate-${suffix}:1`, replenish: `ghcr.io/example/fields-replenish-${suffix}:1` };
    const after = { recreate: `ghcr.io/example/fields-recreate-${suffix}:2`, replenish: `ghcr.io/example/fields-replenish-${suffix}:2` };
    await apply([
      template('recreate', {}, before.recreate),
      pool('recreate', 2, { updateStrategy: { type: 'Recreate' } }),
      template('replenish', {}, before.replenish),
      pool('replenish', 2),
    ]);
    await poolCondition('recreate', 'Ready', 'True', 'PoolWarm');
    await poolCondition('replenish', 'Ready', 'True', 'PoolWarm');
    // the new keys can never warm: what each strategy does with the old key is then plain to see
    for (const node of sys.nodes)
      await setSimFaults(node, { failProvision: [{ template: after.recreate }, { template: after.replenish }] });
    await apply([template('recreate', {}, after.recreate), template('replenish', {}, after.replenish)]);
    await eventually(
      async () => {
        const recreate = await readPool('recreate');
        expect(recreate.status?.poolKey?.template).toBe(after.recreate);
        expect(recreate.status?.retiringPoolKey).toBeUndefined();
        expect(await onNodes(before.recreate)).toEqual({ target: 0, warm: 0 });
        const replenish = await readPool('replenish');
        expect(replenish.status?.poolKey?.template).toBe(after.replenish);
        expect(replenish.status?.retiringPoolKey?.template).toBe(before.replenish);
        expect(await onNodes(before.replenish)).toEqual({ target: 2, warm: 2 });
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    for (const node of sys.nodes) await clearSimFaults(node);
  });
});

describe('Sandbox create through the aggregated API', () => {
  const cases: { name: string; spec: Record<string, unknown>; field: string }[] = [
    { name: 'retain', spec: { shutdownTime: inAnHour(), shutdownPolicy: 'Retain' }, field: 'spec.shutdownPolicy' },
    { name: 'pvc', spec: { volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: {} }] }, field: 'spec.volumeClaimTemplates' },
    { name: 'svc', spec: { service: true }, field: 'spec.service' },
  ];

  it.each(cases)('$field: a 422 Status with a cause naming it, and no VM', async (c) => {
    const r = await createSandbox(`sb-${c.name}`, c.spec);
    expect(r.code).toBe(422);
    expect(r.body).toMatchObject({ kind: 'Status', reason: 'Invalid', code: 422 });
    const causes = (r.body['details'] as { causes?: { field?: string; reason?: string; message?: string }[] }).causes ?? [];
    expect(causes).toEqual([expect.objectContaining({ field: c.field, reason: 'FieldValueForbidden' })]);
    expect(await heldFor(`sb-${c.name}`)).toBe(0);
  });

  it('creates a Sandbox whose fields are defaults (Delete, service false, no volume claim templates)', async () => {
    const r = await createSandbox('sb-defaults', {
      shutdownTime: inAnHour(),
      shutdownPolicy: 'Delete',
      service: false,
      volumeClaimTemplates: [],
    });
    expect(r.code).toBe(201);
    expect(await heldFor('sb-defaults')).toBe(1);
  });

  it('answers a create with pod template fields a microVM does not use with a Warning kubectl prints', async () => {
    const body = {
      apiVersion: 'agents.x-k8s.io/v1beta1',
      kind: 'Sandbox',
      metadata: { name: 'sb-warned', namespace: ns },
      spec: {
        podTemplate: {
          spec: {
            runtimeClassName: 'gvisor',
            containers: [{ name: 'agent', image: IMAGE, resources: RESOURCES, command: ['sleep', 'infinity'] }],
          },
        },
      },
    };
    const r = await kubectl(['create', '-f', '-'], { kubeconfig: editor, input: JSON.stringify(body) });
    // the whole answer on failure, so a refusal shows its reason
    expect(`${r.code} ${r.code === 0 ? '' : r.stderr}`).toBe('0 ');
    expect(r.stdout).toContain('sandbox.agents.x-k8s.io/sb-warned created');
    const warning = r.stderr.split('\n').find((l) => l.startsWith('Warning:')) ?? '';
    expect(warning).toContain('spec.podTemplate.spec.runtimeClassName');
    expect(warning).toContain('spec.podTemplate.spec.containers[0].command');
    expect(await heldFor('sb-warned')).toBe(1);
  });
});
