import { RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { parse } from 'yaml';
import { FAST_PATH_AUDIENCE } from '@sandbox-scale/scale-core';
import { eventually, REPO_ROOT, runSuffix, serviceAccountToken, type RunResult, kubectlOk } from '../src/index';
import { exposedNames, promqlMetricNames, samples } from '../src/testing/metric-names';
import { SYSTEM_NAMESPACE } from '../src/system/local-system';
import { applyWarmPool, startSuiteSystem } from '../src/system/suite-system';
import type { SystemUnderTest } from '../src/system/system-under-test';

// Every app's /metrics in the running system, read as a scraper reads it: over HTTPS under a
// ServiceAccount bound to the chart's metrics reader ClusterRole, the controllers and the
// publishers on their metrics ports, sandbox-apiserver on its secure port. Every metric the chart's alerts
// and dashboard name must be exported (kube-apiserver's own for the APIService alert), so the
// files and the apps cannot drift apart.

const ns = `t-metrics-${runSuffix()}`;
const GROUP = 'extensions.agents.x-k8s.io';
const chartFiles = join(REPO_ROOT, 'charts', 'sandbox-scale', 'files');
let sys: SystemUnderTest;
/** TLS to sandbox-apiserver and to the fast path (each checked against its own certificate's name). */
let apiserverDispatcher: Agent;
let fastPathDispatcher: Agent;
/** The token of the system's metrics reader (the chart's reader ClusterRole bound to it). */
let scraperToken: string;

function k(args: string[], input?: string): Promise<RunResult> {
  return kubectlOk(args, { kubeconfig: sys.kubeconfigPath, input });
}

/** sandbox-apiserver's /metrics (the controllers' and publishers' go through sys.scrapeMetrics). */
async function get(url: string, token?: string): Promise<{ status: number; text: string }> {
  const r = await request(url, {
    dispatcher: apiserverDispatcher,
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  return { status: r.statusCode, text: await r.body.text() };
}

/** An app's /metrics page as the reader scrapes it; a refusal is an error. */
async function pageOf(app: string): Promise<string> {
  const r = await sys.scrapeMetrics(app);
  if (r.status !== 200) throw new Error(`${app} /metrics: ${r.status} ${r.text}`);
  return r.text;
}

/** Every expression of the chart's rule file and dashboard. */
function chartExpressions(): { where: string; expr: string }[] {
  const rules = parse(readFileSync(join(chartFiles, 'prometheus-rules.yaml'), 'utf8')) as {
    groups: { name: string; rules: { alert?: string; record?: string; expr: string }[] }[];
  };
  const dashboard = JSON.parse(readFileSync(join(chartFiles, 'grafana-dashboard.json'), 'utf8')) as {
    panels: { title: string; targets?: { expr: string }[] }[];
  };
  return [
    ...rules.groups.flatMap((g) => g.rules.map((r) => ({ where: `rule ${r.alert ?? r.record ?? '?'}`, expr: r.expr }))),
    ...dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ where: `panel "${p.title}"`, expr: t.expr }))),
  ];
}

/** app name -> its /metrics page, every app of the system. */
async function scrapeAll(): Promise<Map<string, string>> {
  const pages = new Map<string, string>();
  for (const app of (await sys.metricsEndpoints()).keys()) pages.set(app, await pageOf(app));
  const api = await get(`${sys.apiserverUrl}/metrics`, scraperToken);
  if (api.status !== 200) throw new Error(`sandbox-apiserver /metrics: ${api.status} ${api.text}`);
  pages.set('sandbox-apiserver', api.text);
  return pages;
}

const sum = (page: string, name: string, match: Record<string, string>): number =>
  samples(page, name)
    .filter((s) => Object.entries(match).every(([key, v]) => s.labels[key] === v))
    .reduce((a, s) => a + s.value, 0);

beforeAll(async () => {
  sys = await startSuiteSystem({ namespaces: [ns], local: { nodes: 2, speed: 0, metrics: true, publishInterval: '1s' } });
  apiserverDispatcher = new Agent({ connect: { ca: sys.servingCa, servername: sys.servernameOf(sys.apiserverUrl) } });
  fastPathDispatcher = new Agent({ connect: { ca: sys.servingCa, servername: sys.servernameOf(sys.fastPathUrl) } });
  // the scraper: a ServiceAccount bound to the chart's reader ClusterRole, as metrics.readerSubjects binds one
  scraperToken = await sys.metricsReaderToken();
  // a warm pool, and a pool whose template nobody keeps warm: its claims boot a VM (cold)
  await applyWarmPool(sys, ns, { name: 'warm', image: 'ghcr.io/example/metrics-warm:1.0', replicas: 4 });
  await applyWarmPool(sys, ns, { name: 'cold', image: 'ghcr.io/example/metrics-cold:1.0', replicas: 0, coldStart: 'WhenNoWarmCapacity' });
  await eventually(
    async () => {
      const pool = JSON.parse((await k(['get', 'sandboxwarmpool', 'warm', '-n', ns, '-o', 'json'])).stdout) as {
        status?: { readyReplicas?: number };
      };
      if ((pool.status?.readyReplicas ?? 0) < 4) throw new Error(`pool not warm yet: ${JSON.stringify(pool.status)}`);
    },
    { timeoutMs: 90_000, intervalMs: 500 },
  );
}, 300_000);

afterAll(async () => {
  for (const d of [apiserverDispatcher, fastPathDispatcher]) await d?.close();
  await sys?.stop();
}, 120_000);

describe('metrics of the running system', () => {
  it('counts claims by path (fast, claim) and start (warm, cold)', async () => {
    const claim = (name: string, pool: string) => ({
      apiVersion: `${GROUP}/v1beta1`,
      kind: 'SandboxClaim',
      metadata: { name, namespace: ns },
      spec: { warmPoolRef: { name: pool } },
    });
    await k(
      ['apply', '-f', '-'],
      JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [claim('by-claim', 'warm'), claim('by-cold-claim', 'cold')] }),
    );
    // the fast path, by a ServiceAccount that may create claims in its namespace
    const rbac = sys.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace: ns,
      body: { metadata: { name: 'claims-create' }, rules: [{ apiGroups: [GROUP], resources: ['sandboxclaims'], verbs: ['create'] }] },
    });
    const token = await serviceAccountToken(sys.kubeConfig, ns, 'agent', [FAST_PATH_AUDIENCE]);
    await rbac.createNamespacedRoleBinding({
      namespace: ns,
      body: {
        metadata: { name: 'agent' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'claims-create' },
        subjects: [{ kind: 'ServiceAccount', name: 'agent', namespace: ns }],
      },
    });
    const fast = await eventually(
      async () => {
        const r = await request(`${sys.fastPathUrl}/v1/claims`, {
          method: 'POST',
          dispatcher: fastPathDispatcher,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify({ namespace: ns, name: 'by-fast-path', warmPool: 'warm' }),
        });
        const body = await r.body.text();
        // RBAC bindings reach the authorizer's cache a moment after they are written
        if (r.statusCode !== 200 && r.statusCode !== 201) throw new Error(`fast path ${r.statusCode}: ${body}`);
        return r.statusCode;
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    expect([200, 201]).toContain(fast);
    // every claim-controller replica's page: the leader counts the claims it binds, each replica the fast-path claims it served
    const page = await eventually(
      async () => {
        const apps = [...(await sys.metricsEndpoints()).keys()].filter((app) => /^claim-controller(-\d+)?$/.test(app));
        if (apps.length === 0) throw new Error('claim-controller has not said where it serves metrics');
        const text = (await Promise.all(apps.map(pageOf))).join('\n');
        const name = 'sandbox_scale_claim_controller_claims_total';
        for (const labels of [
          { path: 'claim', start: 'warm' },
          { path: 'fast', start: 'warm' },
          { path: 'claim', start: 'cold' },
        ]) {
          if (sum(text, name, { outcome: 'delivered', ...labels }) < 1) throw new Error(`no delivered claim ${JSON.stringify(labels)} yet`);
        }
        return text;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    const delivered = samples(page, 'sandbox_scale_claim_controller_claims_total').filter((s) => s.labels.outcome === 'delivered');
    const byKind = new Map<string, number>();
    for (const s of delivered)
      byKind.set(`${s.labels.path}/${s.labels.start}`, (byKind.get(`${s.labels.path}/${s.labels.start}`) ?? 0) + s.value);
    process.stdout.write(`delivered claims by path/start: ${[...byKind].map(([kind, n]) => `${kind}=${n}`).join(' ')}\n`);
    // one claim of each kind; the installed chart also counts what the suites before this one claimed
    if (sys.target === 'local') expect(Object.fromEntries(byKind)).toEqual({ 'claim/warm': 1, 'fast/warm': 1, 'claim/cold': 1 });
    for (const kind of ['claim/warm', 'fast/warm', 'claim/cold']) expect(byKind.get(kind)).toBeGreaterThanOrEqual(1);
    // a cold claim first found no warm VM of its key
    expect(
      sum(page, 'sandbox_scale_claim_controller_claims_total', { outcome: 'no_capacity', path: 'claim', start: 'warm' }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      sum(page, 'sandbox_scale_claim_controller_claim_duration_seconds_count', { outcome: 'delivered', path: 'claim', start: 'cold' }),
    ).toBeGreaterThanOrEqual(1);
  });

  it("exports process metrics and its own from every app, and every metric the chart's alerts and dashboard name", async () => {
    const apps = ['claim-controller', 'warmpool-driver', ...sys.nodes.map((n) => `inventory-publisher-${n.name}`)];
    await eventually(
      async () => {
        const urls = await sys.metricsEndpoints();
        const missing = apps.filter((a) => !urls.has(a));
        if (missing.length > 0) throw new Error(`no metrics address yet from ${missing.join(', ')}`);
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    const pages = await scrapeAll();
    // installed: the second replica of each Deployment too (`<app>-1`)
    const replicas = sys.target === 'installed' ? ['claim-controller-1', 'warmpool-driver-1'] : [];
    expect([...pages.keys()].sort()).toEqual([...apps, ...replicas, 'sandbox-apiserver'].sort());
    const claimController = [
      'claims_total',
      'claim_duration_seconds',
      'records_total',
      'orphan_items_total',
      'lease_renewals_total',
      'fast_path_requests_total',
    ].map((n) => `sandbox_scale_claim_controller_${n}`);
    const driver = ['pool_target_replicas', 'pool_warm_replicas', 'pool_ready_replicas', 'pool_degraded', 'pool_puts_total'].map(
      (n) => `sandbox_scale_warmpool_driver_${n}`,
    );
    const apiserver = ['requests_total', 'request_duration_seconds', 'inventory_stale', 'inventory_draining', 'inventory_entries'].map(
      (n) => `sandbox_scale_apiserver_${n}`,
    );
    const publisher = ['publishes_total', 'stale', 'entries', 'last_fresh_timestamp_seconds'].map(
      (n) => `sandbox_scale_inventory_publisher_${n}`,
    );
    const own: Record<string, string[]> = {
      'claim-controller': claimController,
      'warmpool-driver': driver,
      'sandbox-apiserver': apiserver,
    };
    for (const [app, page] of pages) {
      const names = exposedNames(page);
      const wanted = [
        ...(own[app.replace(/-\d+$/, '')] ?? publisher),
        'process_resident_memory_bytes',
        'process_cpu_seconds_total',
        'nodejs_eventloop_lag_p99_seconds',
        'nodejs_heap_size_used_bytes',
        'sandbox_scale_build_info',
      ];
      expect({ app, missing: wanted.filter((n) => !names.has(n)) }).toEqual({ app, missing: [] });
    }
    // the APIService alert reads kube-apiserver's aggregator metric
    const kas = await k(['get', '--raw', '/metrics']);
    // and the target alerts read `up`, which Prometheus itself writes for every scrape
    const exported = new Set([...[...pages.values(), kas.stdout].flatMap((p) => [...exposedNames(p)]), 'up']);
    const used = chartExpressions().flatMap(({ where, expr }) => promqlMetricNames(expr).map((name) => ({ where, name })));
    const distinct = new Set(used.map((u) => u.name));
    // the parse found the names (a parser that finds none would pass the check below)
    expect(distinct.size).toBeGreaterThanOrEqual(15);
    expect(distinct).toContain('sandbox_scale_claim_controller_claim_duration_seconds_bucket');
    expect(used.filter((u) => !exported.has(u.name))).toEqual([]);
  });

  it('tells which build every replica runs, and which replica of each electing app leads', async () => {
    const pages = await scrapeAll();
    // installed images carry the release stamps the image build passes; processes run from a checkout are unstamped
    const stamp =
      sys.target === 'installed'
        ? { version: (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version }
        : { version: 'unknown', revision: 'unknown' };
    for (const [app, page] of pages) {
      const info = samples(page, 'sandbox_scale_build_info');
      expect({ app, info: info.map((s) => ({ value: s.value, app: s.labels['app'] })) }).toEqual({
        app,
        info: [{ value: 1, app: app.replace(/-\d+$/, '').replace(/^inventory-publisher-.*/, 'inventory-publisher') }],
      });
      expect(info[0]?.labels).toMatchObject(stamp);
      if (sys.target === 'installed') expect(info[0]?.labels['revision']).toMatch(/^[0-9a-f]{40}(-dirty)?$/);
    }
    // exactly one leader per electing app, whichever replica it is; the publisher and the API server elect nobody
    for (const app of ['claim-controller', 'warmpool-driver']) {
      const replicas = [...pages].filter(([name]) => name.replace(/-\d+$/, '') === app);
      const leaders = replicas.map(([, page]) => sum(page, 'sandbox_scale_leader', {}));
      expect({ app, leaders: leaders.filter((v) => v === 1).length, replicas: leaders.length }).toEqual({
        app,
        leaders: 1,
        replicas: sys.target === 'installed' ? 2 : 1,
      });
    }
    expect(samples(pages.get('sandbox-apiserver') ?? '', 'sandbox_scale_leader')).toEqual([]);
  });

  it('reports per-pool warm, target and ready replicas, and per-node inventory staleness', async () => {
    const driver = await eventually(
      async () => {
        // the leading replica's page: the only one counting warm VMs (a standby reports the recorded status only)
        const drivers = [...(await sys.metricsEndpoints()).keys()].filter((app) => /^warmpool-driver(-\d+)?$/.test(app));
        const withPool = (await Promise.all(drivers.map(pageOf))).filter((text) =>
          samples(text, 'sandbox_scale_warmpool_driver_pool_warm_replicas').some(
            (x) => x.labels.namespace === ns && x.labels.pool === 'warm',
          ),
        );
        if (withPool.length !== 1)
          throw new Error(`${withPool.length} of ${drivers.length} warmpool-driver replicas count this pool's warm VMs`);
        const text = withPool[0] as string;
        // the two claims above took warm VMs; the nodes refill them and the status follows
        for (const g of ['warm', 'ready'])
          if (sum(text, `sandbox_scale_warmpool_driver_pool_${g}_replicas`, { namespace: ns, pool: 'warm' }) < 4)
            throw new Error(`${g} gauge not refilled yet`);
        return text;
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    const of = (name: string, pool: string): number | undefined =>
      samples(driver, name).find((s) => s.labels.namespace === ns && s.labels.pool === pool)?.value;
    const warm = {
      target: of('sandbox_scale_warmpool_driver_pool_target_replicas', 'warm'),
      warm: of('sandbox_scale_warmpool_driver_pool_warm_replicas', 'warm'),
      ready: of('sandbox_scale_warmpool_driver_pool_ready_replicas', 'warm'),
      degraded: of('sandbox_scale_warmpool_driver_pool_degraded', 'warm'),
    };
    process.stdout.write(`pool warm: ${JSON.stringify(warm)}\n`);
    expect(warm).toEqual({ target: 4, warm: 4, ready: 4, degraded: 0 });
    expect(of('sandbox_scale_warmpool_driver_pool_target_replicas', 'cold')).toBe(0);
    const api = (await get(`${sys.apiserverUrl}/metrics`, scraperToken)).text;
    const stale = samples(api, 'sandbox_scale_apiserver_inventory_stale');
    process.stdout.write(`inventory stale by node: ${stale.map((s) => `${s.labels.node}=${s.value}`).join(' ')}\n`);
    expect(stale.map((s) => s.labels.node).sort()).toEqual(sys.nodes.map((n) => n.name).sort());
    expect(stale.every((s) => s.value === 0)).toBe(true);
    for (const n of sys.nodes) {
      const pub = await pageOf(`inventory-publisher-${n.name}`);
      expect(samples(pub, 'sandbox_scale_inventory_publisher_stale')).toEqual([{ labels: {}, value: 0 }]);
      expect(samples(pub, 'sandbox_scale_inventory_publisher_last_fresh_timestamp_seconds')[0]?.value).toBeGreaterThan(0);
    }
    // API latency by verb: the kubectl list below is counted under verb="list" (by the replica
    // kube-apiserver sent it to, so summed over the replicas)
    const lists = async (): Promise<number> => {
      const pages = await Promise.all(sys.apiserverUrls.map(async (url) => (await get(`${url}/metrics`, scraperToken)).text));
      return pages.reduce(
        (n, page) => n + sum(page, 'sandbox_scale_apiserver_request_duration_seconds_count', { verb: 'list', resource: 'sandboxes' }),
        0,
      );
    };
    const before = await lists();
    await k(['get', 'sandboxes', '-n', ns]);
    expect(await lists()).toBeGreaterThanOrEqual(before + 1);
  });

  it('serves sandbox-apiserver /metrics only to a caller the reader ClusterRole is bound to', async () => {
    const other = await serviceAccountToken(sys.kubeConfig, SYSTEM_NAMESPACE, 'not-a-scraper', []);
    const denied = await get(`${sys.apiserverUrl}/metrics`, other);
    expect(denied.status).toBe(403);
    expect(JSON.parse(denied.text)).toMatchObject({ kind: 'Status', code: 403, reason: 'Forbidden' });
    expect((await get(`${sys.apiserverUrl}/metrics`, scraperToken)).status).toBe(200);
  });

  it('lists every sandbox-scale resource under the category: kubectl get sandbox-scale', async () => {
    const resources = (await k(['api-resources', '--categories', 'sandbox-scale', '-o', 'name'])).stdout.trim().split('\n').sort();
    expect(resources).toEqual([
      'nodeinventories.extensions.agents.x-k8s.io',
      'sandboxclaims.extensions.agents.x-k8s.io',
      'sandboxes.agents.x-k8s.io',
      'sandboxtemplates.extensions.agents.x-k8s.io',
      'sandboxwarmpools.extensions.agents.x-k8s.io',
    ]);
    const listed = (await k(['get', 'sandbox-scale', '-n', ns, '-o', 'name'])).stdout;
    for (const kind of [
      'sandboxtemplate.extensions.agents.x-k8s.io/warm',
      'sandboxwarmpool.extensions.agents.x-k8s.io/warm',
      'sandboxclaim.extensions.agents.x-k8s.io/by-claim',
      'sandbox.agents.x-k8s.io/',
    ])
      expect(listed).toContain(kind);
  });
});
