import { RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { Agent, request } from 'undici';
import { createTestNamespace, deleteNamespace, eventually, serviceAccountToken, testKubeConfig } from '@sandbox-scale/e2e';
import {
  ConfigMapResource,
  Manager,
  ResourceClient,
  applyObject,
  controller,
  createInformer,
  parseUntyped,
  type Reconciler,
} from '../src/index';
import { captureLog } from '../src/testing';

const kc = testKubeConfig();
let ns: string;

beforeAll(async () => {
  ns = await createTestNamespace(kc, 'kr-manager');
});
afterAll(async () => {
  await kc
    .makeApiClient(RbacAuthorizationV1Api)
    .deleteClusterRoleBinding({ name: `${ns}-metrics` })
    .catch(() => undefined);
  await kc
    .makeApiClient(RbacAuthorizationV1Api)
    .deleteClusterRole({ name: `${ns}-metrics` })
    .catch(() => undefined);
  await deleteNamespace(kc, ns);
});

describe('Manager with a controller against a real API server', () => {
  it('syncs, wins the Lease, reconciles through SSA, serves probes and metrics, and stops cleanly', async () => {
    const { log } = captureLog();
    const registry = new Registry();
    const sources = createInformer(kc, {
      resource: ConfigMapResource,
      namespace: ns,
      parse: parseUntyped,
      log,
      labelSelector: 'kr-test/source=true',
    });
    // Copies each labelled ConfigMap to <name>-copy: a level-based reconciler reading the cache.
    const reconciler: Reconciler = {
      async reconcile(req, ctx) {
        const src = sources.get(req.namespace, req.name);
        if (!src) return;
        await applyObject(
          kc,
          {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: `${req.name}-copy`, namespace: req.namespace },
            data: src.data as Record<string, string>,
          },
          { fieldManager: 'sandbox-scale/kube-runtime-test', force: true, signal: ctx.signal },
        );
      },
    };
    const mgr = new Manager({
      log,
      registry,
      kubeConfig: kc,
      leaderElection: { namespace: ns, name: 'copier', leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 200 },
      healthProbeBindAddress: '127.0.0.1:0',
      // delegated (the default): TokenReview and SubjectAccessReview against this API server
      metricsBindAddress: '127.0.0.1:0',
      gracefulShutdownTimeoutMs: 10_000,
    })
      .addInformer(sources)
      .add(controller({ name: 'copier', reconciler, log, registry, concurrency: 2 }).for(sources).build());
    const stop = new AbortController();
    const done = mgr.start(stop.signal);

    const cms = new ResourceClient(kc, ConfigMapResource);
    await cms.create(ns, { metadata: { name: 'src', labels: { 'kr-test/source': 'true' } }, data: { k: 'v1' } });
    await eventually(async () => expect(parseUntyped(await cms.get(ns, 'src-copy')).data).toEqual({ k: 'v1' }), { timeoutMs: 15_000 });
    await cms.mergePatch(ns, 'src', { data: { k: 'v2' } });
    await eventually(async () => expect(parseUntyped(await cms.get(ns, 'src-copy')).data).toEqual({ k: 'v2' }), { timeoutMs: 15_000 });
    expect(mgr.isLeader()).toBe(true);

    const [probePort, metricsPort] = mgr.boundPorts;
    const base = `http://127.0.0.1:${probePort}`;
    const ready = await fetch(`${base}/readyz?verbose`);
    expect(ready.status).toBe(200);
    expect(await ready.text()).toContain(`[+]informer:configmaps@${ns} ok`);
    expect((await fetch(`${base}/metrics`)).status).toBe(404);
    // the metrics port: a ServiceAccount's token, refused until RBAC grants it get on /metrics
    const token = await serviceAccountToken(kc, ns, 'scraper', []);
    const insecure = new Agent({ connect: { rejectUnauthorized: false } });
    const scrape = async (t?: string): Promise<{ status: number; body: string }> => {
      const r = await request(`https://127.0.0.1:${metricsPort}/metrics`, {
        dispatcher: insecure,
        headers: t ? { authorization: `Bearer ${t}` } : {},
      });
      return { status: r.statusCode, body: await r.body.text() };
    };
    expect((await scrape()).status).toBe(401);
    const denied = await scrape(token);
    expect(denied.status).toBe(403);
    expect(JSON.parse(denied.body)).toMatchObject({ reason: 'Forbidden', message: expect.stringContaining('cannot get path "/metrics"') });
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createClusterRole({
      body: { metadata: { name: `${ns}-metrics` }, rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }] },
    });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: `${ns}-metrics` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `${ns}-metrics` },
        subjects: [{ kind: 'ServiceAccount', name: 'scraper', namespace: ns }],
      },
    });
    // the denial is cached for 10 s: the grant shows once it expires
    const metrics = await eventually(
      async () => {
        const r = await scrape(token);
        if (r.status !== 200) throw new Error(`scrape ${r.status}`);
        return r.body;
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    await insecure.close();
    expect(metrics).toMatch(/sandbox_scale_reconcile_total\{controller="copier",result="success"\} [1-9]/);

    stop.abort();
    await expect(done).resolves.toBeUndefined();
    const lease = parseUntyped(
      await new ResourceClient(kc, { group: 'coordination.k8s.io', version: 'v1', plural: 'leases', kind: 'Lease', namespaced: true }).get(
        ns,
        'copier',
      ),
    );
    expect((lease as { spec?: { holderIdentity?: string } }).spec?.holderIdentity).toBe('');
  });
});
