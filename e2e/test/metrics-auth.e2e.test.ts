import { eventually, runSuffix } from '../src/index';
import { startSuiteSystem } from '../src/system/suite-system';
import type { SystemUnderTest } from '../src/system/system-under-test';
import { exposedNames, samples } from '../src/testing/metric-names';
import { grantEditRole } from '../src/testing/tenant-role';

// Who may read the controllers' and the publisher's /metrics: as kube-apiserver and
// metrics-server decide it, by a TokenReview of the bearer token and a SubjectAccessReview for
// get on the non-resource URL /metrics, over HTTPS so the token never crosses the wire in the
// clear. Nobody without a token, and not a namespace's editor; a ServiceAccount bound to the
// chart's metrics-reader ClusterRole, as a Prometheus is. The kubelet's probes carry no token and
// stay open on their own plain-HTTP port.

const ns = `t-metrics-auth-${runSuffix()}`;
let sys: SystemUnderTest;
let tenantToken: string;

/** A family each app exports from its start, whatever it has done yet. */
const KNOWN: Record<string, string> = {
  'claim-controller': 'sandbox_scale_claim_controller_claims_total',
  'warmpool-driver': 'sandbox_scale_warmpool_driver_pool_puts_total',
  'inventory-publisher': 'sandbox_scale_inventory_publisher_publishes_total',
};
/** The app keys of the system under test that this suite reads: one replica of each, one node's publisher. */
let apps: string[] = [];
const kindOf = (app: string): string => app.replace(/-\d+$/, '').replace(/^inventory-publisher-.*$/, 'inventory-publisher');

beforeAll(async () => {
  sys = await startSuiteSystem({ namespaces: [ns], local: { nodes: 1, speed: 0, metrics: true } });
  // a tenant as a platform team makes one: the chart's aggregated edit role in its own namespace
  await grantEditRole(sys.kubeConfig, ns, 'tenant');
  tenantToken = (await sys.tenant(ns, 'tenant')).token;
  apps = await eventually(
    async () => {
      const endpoints = [...(await sys.metricsEndpoints()).keys()];
      const probes = await sys.probeUrls();
      const pick = ['claim-controller', 'warmpool-driver', endpoints.find((a) => a.startsWith('inventory-publisher-'))];
      const missing = pick.filter((a) => a === undefined || !endpoints.includes(a) || !probes.has(a));
      if (missing.length > 0) throw new Error(`not every app has said where it serves metrics and probes yet: ${pick.join(', ')}`);
      return pick as string[];
    },
    { timeoutMs: 60_000, intervalMs: 500 },
  );
}, 240_000);

afterAll(async () => {
  await sys?.stop();
}, 120_000);

describe('the controllers and the publisher authorize /metrics', () => {
  it('answers 401 without a token, 403 to a namespace editor and 200 to the metrics reader, over HTTPS', async () => {
    const seen: Record<string, { none: number; tenant: number; reader: number }> = {};
    for (const app of apps) {
      const none = await sys.scrapeMetrics(app, { token: null });
      expect({ app, status: none.status, body: JSON.parse(none.text) as unknown }).toMatchObject({
        app,
        status: 401,
        body: { kind: 'Status', code: 401, reason: 'Unauthorized' },
      });
      const tenant = await sys.scrapeMetrics(app, { token: tenantToken });
      expect({ app, status: tenant.status, body: JSON.parse(tenant.text) as unknown }).toMatchObject({
        app,
        status: 403,
        body: {
          kind: 'Status',
          code: 403,
          reason: 'Forbidden',
          message: expect.stringContaining(`User "system:serviceaccount:${ns}:tenant" cannot get path "/metrics"`),
        },
      });
      expect(tenant.text).not.toContain('process_cpu_seconds_total');
      // the reader's ClusterRoleBinding is new: RBAC's cache may take a moment to see it
      const reader = await eventually(
        async () => {
          const r = await sys.scrapeMetrics(app);
          if (r.status !== 200) throw new Error(`${app}: reader answered ${r.status} ${r.text}`);
          return r;
        },
        { timeoutMs: 30_000, intervalMs: 500 },
      );
      const names = exposedNames(reader.text);
      const known = KNOWN[kindOf(app)] ?? '';
      expect({ app, known: names.has(known), cpu: samples(reader.text, 'process_cpu_seconds_total').length }).toEqual({
        app,
        known: true,
        cpu: 1,
      });
      seen[app] = { none: none.status, tenant: tenant.status, reader: reader.status };
    }
    process.stdout.write(`metrics scrapes by caller: ${JSON.stringify(seen)}\n`);
    expect(Object.values(seen)).toEqual(apps.map(() => ({ none: 401, tenant: 403, reader: 200 })));
  });

  it('does not serve the metrics port in the clear', async () => {
    for (const app of apps) {
      const url = (await sys.metricsEndpoints()).get(app)?.url ?? '';
      expect({ app, scheme: new URL(url).protocol }).toEqual({ app, scheme: 'https:' });
      await expect(fetch(url.replace(/^https:/, 'http:'))).rejects.toThrow();
    }
  });

  it('keeps the probes open without a token, and serves no metrics on the probe port', async () => {
    const probes = await sys.probeUrls();
    for (const app of apps) {
      const base = probes.get(app) ?? '';
      expect({ app, scheme: new URL(base).protocol }).toEqual({ app, scheme: 'http:' });
      const healthz = await fetch(`${base}/healthz`);
      expect({ app, status: healthz.status, body: await healthz.text() }).toEqual({ app, status: 200, body: 'ok' });
      expect({ app, readyz: (await fetch(`${base}/readyz`)).status }).toEqual({ app, readyz: 200 });
      const metrics = await fetch(`${base}/metrics`);
      const text = await metrics.text();
      expect({ app, status: metrics.status, leaks: text.includes('process_cpu_seconds_total') }).toEqual({
        app,
        status: 404,
        leaks: false,
      });
    }
  });
});
