import { AutoscalingV2Api, CustomObjectsApi } from '@kubernetes/client-node';
import { kubeApiClient } from '@sandbox-scale/kube-runtime';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { z } from 'zod';
import { eventually, REPO_ROOT, runSuffix, kubectlOk } from '../src/index';
import { monitoringToolsDir } from '../src/control-plane/tools';
import { startPrometheus, type Prometheus } from '../src/monitoring/prometheus';
import { startPrometheusAdapter, type PrometheusAdapter } from '../src/monitoring/prometheus-adapter';
import { samples } from '../src/testing/metric-names';
import { applyWarmPool, itWhere, startSuiteSystem, waitPoolReady } from '../src/system/suite-system';
import { e2eTarget, type SystemUnderTest } from '../src/system/system-under-test';

// agent-sandbox's metrics as its recipes read them: claim-controller's /metrics scraped with the
// chart's reader identity carries agent_sandbox_* series whose values are the claims made here;
// then the whole autoscaling path of examples/hpa/: a real Prometheus scrapes claim-controller, a
// real prometheus-adapter serves the per-pool claim rate as an external metric through
// kube-apiserver, and kube-controller-manager's HPA controller scales a SandboxWarmPool's
// spec.replicas through its scale subresource. Two claim-controller replicas, as the chart runs.

const ns = `t-upmetrics-${runSuffix()}`;
const EXT = { group: 'extensions.agents.x-k8s.io', version: 'v1beta1' };
const HPA_DIR = join(REPO_ROOT, 'examples', 'hpa');
let sys: SystemUnderTest;

const ClaimListSchema = z.object({
  items: z.array(
    z.object({
      metadata: z.object({ name: z.string() }),
      status: z.object({ conditions: z.array(z.object({ type: z.string(), status: z.string() })).optional() }).optional(),
    }),
  ),
});

function claimBody(name: string, pool: string, labels: Record<string, string> = {}): object {
  return {
    apiVersion: `${EXT.group}/${EXT.version}`,
    kind: 'SandboxClaim',
    metadata: { name, namespace: ns, labels },
    spec: { warmPoolRef: { name: pool } },
  };
}

/** Names of the claims whose name starts with `prefix` and which are Bound. */
async function boundClaims(prefix: string): Promise<string[]> {
  const custom = kubeApiClient(sys.kubeConfig, CustomObjectsApi);
  const list = ClaimListSchema.parse(await custom.listNamespacedCustomObject({ ...EXT, namespace: ns, plural: 'sandboxclaims' }));
  return list.items
    .filter((c) => c.metadata.name.startsWith(prefix))
    .filter((c) => c.status?.conditions?.some((x) => x.type === 'Bound' && x.status === 'True'))
    .map((c) => c.metadata.name);
}

/** Every claim-controller replica's /metrics page, read with the chart's metrics-reader identity. */
async function claimControllerPages(): Promise<string[]> {
  const apps = [...(await sys.metricsEndpoints()).keys()].filter((app) => /^claim-controller(-\d+)?$/.test(app));
  if (apps.length === 0) throw new Error('claim-controller has not said where it serves metrics');
  return Promise.all(
    apps.map(async (app) => {
      const r = await sys.scrapeMetrics(app);
      if (r.status !== 200) throw new Error(`${app} /metrics: ${r.status}`);
      return r.text;
    }),
  );
}

const sumOf = (pages: string[], name: string, match: Record<string, string>): number =>
  pages
    .flatMap((p) => samples(p, name))
    .filter((s) => Object.entries(match).every(([k, v]) => s.labels[k] === v))
    .reduce((a, s) => a + s.value, 0);

/** A Kubernetes quantity as the external metrics API writes values ("12", "1500m", "2k"). */
function quantity(q: string): number {
  const m = /^(\d+(?:\.\d+)?)(m|k)?$/.exec(q);
  if (!m) throw new Error(`not a quantity: ${q}`);
  return Number(m[1]) * (m[2] === 'm' ? 1e-3 : m[2] === 'k' ? 1e3 : 1);
}

/** Prometheus and prometheus-adapter (local target): built before the suite, so a fresh machine's build (minutes) is no test's time. */
let monitoringBinDir: string | undefined;

beforeAll(async () => {
  if (e2eTarget() === 'local') {
    const started = Date.now();
    monitoringBinDir = monitoringToolsDir();
    process.stdout.write(`monitoring tools (Prometheus, prometheus-adapter) ready in ${Math.round((Date.now() - started) / 1000)} s\n`);
  }
  sys = await startSuiteSystem({
    namespaces: [ns],
    local: { nodes: 2, speed: 0, metrics: true, publishInterval: '1s', claimControllerReplicas: 2 },
  });
}, 600_000);

afterAll(async () => {
  await sys?.stop();
}, 120_000);

describe("agent-sandbox's metrics under its names", () => {
  it('counts claims per warm pool, times them in its buckets and reports the live sandboxes from one replica', async () => {
    const pool = 'upstream-counted';
    await applyWarmPool(sys, ns, { name: pool, image: 'ghcr.io/example/upstream-counted:1.0', replicas: 3 });
    await waitPoolReady(sys, ns, 3, { name: pool });
    const names = ['counted-0', 'counted-1', 'counted-2'];
    const labels = (i: number): Record<string, string> => (i === 0 ? { 'agents.x-k8s.io/created-by': 'python-client' } : {});
    const custom = kubeApiClient(sys.kubeConfig, CustomObjectsApi);
    for (const [i, name] of names.entries())
      await custom.createNamespacedCustomObject({ ...EXT, namespace: ns, plural: 'sandboxclaims', body: claimBody(name, pool, labels(i)) });
    await eventually(
      async () => {
        const bound = await boundClaims('counted-');
        if (bound.length !== names.length) throw new Error(`${bound.length}/${names.length} claims Bound`);
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    const mine = { namespace: ns, warmpool_name: pool };
    const pages = await eventually(
      async () => {
        const p = await claimControllerPages();
        const live = sumOf(p, 'agent_sandboxes', { namespace: ns, sandbox_template: pool });
        // the sandboxes appear once the nodes have published them
        if (live !== names.length) throw new Error(`agent_sandboxes reads ${live} of ${names.length}`);
        return p;
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    const created = sumOf(pages, 'agent_sandbox_claim_creation_total', mine);
    const byCreator = {
      'python-client': sumOf(pages, 'agent_sandbox_claim_creation_total', { ...mine, created_by: 'python-client' }),
      unknown: sumOf(pages, 'agent_sandbox_claim_creation_total', { ...mine, created_by: 'unknown' }),
    };
    const warmReady = sumOf(pages, 'agent_sandbox_claim_creation_total', {
      ...mine,
      sandbox_template: pool,
      launch_type: 'warm',
      pod_condition: 'ready',
    });
    const timed = sumOf(pages, 'agent_sandbox_claim_startup_latency_ms_count', { launch_type: 'warm', sandbox_template: pool });
    const under4m = sumOf(pages, 'agent_sandbox_claim_startup_latency_ms_bucket', {
      launch_type: 'warm',
      sandbox_template: pool,
      le: '240000',
    });
    const live = sumOf(pages, 'agent_sandboxes', {
      namespace: ns,
      sandbox_template: pool,
      owned_by: 'SandboxClaim',
      ready_condition: 'true',
    });
    const reporting = pages.filter((p) => samples(p, 'agent_sandboxes').some((s) => s.labels.namespace === ns)).length;
    process.stdout.write(
      `claims made ${names.length}: agent_sandbox_claim_creation_total ${created} (python-client ${byCreator['python-client']}, unknown ${byCreator.unknown}, warm+ready ${warmReady}), ` +
        `startup latency observations ${timed} (<= 240000 ms: ${under4m}), agent_sandboxes ${live} on ${reporting} of ${pages.length} replicas\n`,
    );
    expect({ created, byCreator, warmReady, timed, under4m, live }).toEqual({
      created: 3,
      byCreator: { 'python-client': 1, unknown: 2 },
      warmReady: 3,
      timed: 3,
      under4m: 3,
      live: 3,
    });
    // the leader alone: every replica caches the same inventories
    expect(reporting).toBe(1);
    // upstream's buckets, so its dashboards' histogram_quantile reads the same boundaries
    const les = samples(pages.join('\n'), 'agent_sandbox_claim_startup_latency_ms_bucket')
      .filter((s) => s.labels.sandbox_template === pool)
      .map((s) => s.labels.le);
    expect([...new Set(les)]).toEqual([
      '100',
      '250',
      '500',
      '750',
      '1000',
      '1250',
      '1500',
      '2000',
      '2500',
      '5000',
      '10000',
      '30000',
      '60000',
      '120000',
      '240000',
      '+Inf',
    ]);
  }, 180_000);

  // Prometheus and prometheus-adapter run as processes of this machine that dial the apps' metrics
  // addresses; the installed chart's pods are reached through the cluster network only
  itWhere(e2eTarget() === 'local', 'Prometheus and prometheus-adapter run beside the local system only')(
    "scales a SandboxWarmPool by its claim rate: examples/hpa's HPA on the adapter's external metric, read from a real Prometheus",
    async () => {
      const binDir = monitoringBinDir;
      if (binDir === undefined) throw new Error('the monitoring tools were not provided');
      const hpa = parse(readFileSync(join(HPA_DIR, 'hpa.yaml'), 'utf8')) as {
        metadata: { name: string; namespace: string };
        spec: { minReplicas: number; scaleTargetRef: { name: string }; metrics: { external: { metric: { name: string } } }[] };
      };
      const values = parse(readFileSync(join(HPA_DIR, 'prometheus-adapter-values.yaml'), 'utf8')) as { rules: { external: unknown[] } };
      const pool = hpa.spec.scaleTargetRef.name;
      const min = hpa.spec.minReplicas;
      // beyond the warm VMs a burst boots VMs for its claims, as a pool that allows cold starts does
      await applyWarmPool(sys, ns, { name: pool, image: 'ghcr.io/example/hpa-agent:1.0', replicas: min, coldStart: 'WhenNoWarmCapacity' });
      await waitPoolReady(sys, ns, min, { name: pool });
      const targets = [...(await sys.metricsEndpoints())]
        .filter(([app]) => /^claim-controller(-\d+)?$/.test(app))
        .map(([app, e]) => ({ app, address: new URL(e.url).host }));
      let prometheus: Prometheus | undefined;
      let adapter: PrometheusAdapter | undefined;
      let generator: ReturnType<typeof setInterval> | undefined;
      try {
        prometheus = await startPrometheus({
          binDir,
          job: 'claim-controller',
          targets,
          token: await sys.metricsReaderToken(),
          scrapeIntervalSeconds: 1,
        });
        adapter = await startPrometheusAdapter({
          binDir,
          kubeConfig: sys.kubeConfig,
          kubeconfigPath: sys.kubeconfigPath,
          prometheusUrl: prometheus.url,
          externalRules: values.rules.external,
          relistIntervalSeconds: 1,
        });
        await kubectlOk(['apply', '-f', '-'], {
          kubeconfig: sys.kubeconfigPath,
          input: JSON.stringify({ ...hpa, metadata: { ...hpa.metadata, namespace: ns } }),
        });
        // The load: one SandboxClaim every 250 ms (4 per second) until the HPA has scaled the pool.
        // The timer sets the claim rate; nothing waits on it.
        const custom = kubeApiClient(sys.kubeConfig, CustomObjectsApi);
        const creates: Promise<unknown>[] = [];
        generator = setInterval(() => {
          const name = `burst-${creates.length}`;
          creates.push(
            custom.createNamespacedCustomObject({ ...EXT, namespace: ns, plural: 'sandboxclaims', body: claimBody(name, pool) }),
          );
        }, 250);
        const autoscaling = kubeApiClient(sys.kubeConfig, AutoscalingV2Api);
        const rateMetric = hpa.spec.metrics[0]?.external.metric.name ?? '';
        const external = async (metric: string): Promise<number[]> => {
          const r = await kubectlOk(
            ['get', '--raw', `/apis/external.metrics.k8s.io/v1beta1/namespaces/${ns}/${metric}?labelSelector=warmpool_name%3D${pool}`],
            { kubeconfig: sys.kubeconfigPath },
          );
          const list = z.object({ items: z.array(z.object({ value: z.string() })) }).parse(JSON.parse(r.stdout));
          return list.items.map((i) => quantity(i.value));
        };
        const scaled = await eventually(
          async () => {
            const wp = (await custom.getNamespacedCustomObject({ ...EXT, namespace: ns, plural: 'sandboxwarmpools', name: pool })) as {
              spec: { replicas: number };
            };
            const h = await autoscaling.readNamespacedHorizontalPodAutoscaler({ namespace: ns, name: hpa.metadata.name });
            if (wp.spec.replicas < 2 * min)
              throw new Error(
                `pool spec.replicas ${wp.spec.replicas}, HPA: ${JSON.stringify(h.status?.conditions?.map((c) => [c.type, c.status, c.reason]))}`,
              );
            return { replicas: wp.spec.replicas, hpa: h, rate: await external(rateMetric) };
          },
          { timeoutMs: 240_000, intervalMs: 500 },
        );
        clearInterval(generator);
        generator = undefined;
        await Promise.all(creates);
        const made = creates.length;
        const current = scaled.hpa.status?.currentMetrics?.[0]?.external?.current.averageValue;
        const conditions = Object.fromEntries((scaled.hpa.status?.conditions ?? []).map((c) => [c.type, c.status]));
        // every claim made is handed a sandbox (warm, or booted for it), then counted once
        await eventually(
          async () => {
            const bound = await boundClaims('burst-');
            if (bound.length !== made) throw new Error(`${bound.length}/${made} burst claims Bound`);
          },
          { timeoutMs: 120_000, intervalMs: 500 },
        );
        const mine = { namespace: ns, warmpool_name: pool };
        const onPage = sumOf(await claimControllerPages(), 'agent_sandbox_claim_creation_total', mine);
        const inPrometheus = await eventually(
          async () => {
            const v = await prometheus?.query(`sum(agent_sandbox_claim_creation_total{namespace="${ns}",warmpool_name="${pool}"})`);
            const n = v?.[0]?.value ?? 0;
            if (n !== made) throw new Error(`Prometheus reads ${n} of ${made} claims`);
            return n;
          },
          { timeoutMs: 30_000, intervalMs: 500 },
        );
        const throughAdapter = await eventually(
          async () => {
            const v = await external('agent_sandbox_claim_creations');
            if (v.length !== 1 || v[0] !== made) throw new Error(`adapter reads ${JSON.stringify(v)} of ${made} claims`);
            return v[0];
          },
          { timeoutMs: 30_000, intervalMs: 500 },
        );
        process.stdout.write(
          `HPA ${hpa.metadata.name}: ${made} claims made at 4/s; pool spec.replicas ${min} -> ${scaled.replicas} ` +
            `(HPA desired ${scaled.hpa.status?.desiredReplicas}, current metric averageValue ${current}); ` +
            `adapter rate ${scaled.rate.join(',')} claims/s; counted ${onPage} on claim-controller, ${inPrometheus} in Prometheus, ${throughAdapter} through the adapter\n`,
        );
        expect({ onPage, inPrometheus, throughAdapter }).toEqual({ onPage: made, inPrometheus: made, throughAdapter: made });
        expect(scaled.replicas).toBeGreaterThanOrEqual(2 * min);
        expect(scaled.rate.length).toBe(1);
        expect(scaled.rate[0]).toBeGreaterThan(0);
        expect(quantity(current ?? '0')).toBeGreaterThan(0);
        expect(conditions).toMatchObject({ AbleToScale: 'True', ScalingActive: 'True' });
      } finally {
        if (generator) clearInterval(generator);
        await adapter?.stop();
        await prometheus?.stop();
      }
    },
    420_000,
  );
});
