import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { z } from 'zod';
import { HELM_TEMPLATE_KUBE_VERSION } from '../src/control-plane/kube-version';
import { monitoringToolsDir, toolPath } from '../src/control-plane/tools';
import { REPO_ROOT } from '../src/images/images';
import { INSTALLED_NAMESPACE, INSTALLED_RELEASE } from '../src/installed/installed-system';
import { connectInstalled, readInstalledState } from '../src/installed/installed-target';
import { ALERT_OVERRIDES, NODE_NAMESPACE } from '../src/installed/installed-values';
import { startPrometheus, type Prometheus } from '../src/monitoring/prometheus';
import {
  endpointTargetGroups,
  parseEndpointSlice,
  scrapeConfigsOfServiceMonitor,
  ServiceMonitorSchema,
} from '../src/monitoring/service-monitor';
import { runCommand } from '../src/system/run-command';
import type { SystemUnderTest } from '../src/system/system-under-test';
import { eventually } from '../src/testing/eventually';
import { warmPoolList } from '../src/testing/sandbox-manifests';

// The chart's monitoring pack as a cluster's Prometheus runs it: a real Prometheus scrapes the
// installed pods with the scrape configuration the chart's ServiceMonitors mean (endpoints
// discovery, the Service labels and port they select, HTTPS, the CA they name, a bearer token of
// the metrics reader), loads the chart's PrometheusRule, and every panel of the chart's Grafana
// dashboard gets a series. Then two faults a platform team pages on, provoked for real: the node's
// sandboxd hangs, and Prometheus cannot reach a controller's metrics; each fires its alert.

const state = readInstalledState();
const ns = 'monitoring-e2e';
const kube = { KUBECONFIG: state.kubeconfigPath };
const kubectl = (args: string[], input?: string): Promise<string> => runCommand(toolPath(state.binDir, 'kubectl'), args, kube, input);
const CHART_JOBS = '.+-(claim-controller|warmpool-driver|inventory-publisher|sandbox-apiserver)-metrics';
let sut: SystemUnderTest;
let prometheus: Prometheus;
let monitors: z.infer<typeof ServiceMonitorSchema>[];
let targetsFile: string;

const PrometheusRuleSchema = z.object({ kind: z.literal('PrometheusRule'), spec: z.object({ groups: z.array(z.unknown()) }) });
const DashboardSchema = z.object({
  panels: z.array(z.object({ title: z.string(), targets: z.array(z.object({ expr: z.string() })) })),
});

/** The chart's ServiceMonitors and PrometheusRule, rendered with the installed release's values. */
async function renderedMonitoring(): Promise<unknown[]> {
  const helm = toolPath(state.binDir, 'helm');
  const dir = mkdtempSync(join(tmpdir(), 'monitoring-'));
  const values = join(dir, 'values.json');
  writeFileSync(values, await runCommand(helm, ['get', 'values', INSTALLED_RELEASE, '-n', INSTALLED_NAMESPACE, '-o', 'json'], kube));
  const out = await runCommand(
    helm,
    [
      'template',
      INSTALLED_RELEASE,
      join(REPO_ROOT, 'charts/sandbox-scale'),
      '-n',
      INSTALLED_NAMESPACE,
      '-f',
      values,
      '--set',
      'metrics.serviceMonitor.enabled=true',
      '--set',
      'metrics.prometheusRule.enabled=true',
      '--api-versions',
      'monitoring.coreos.com/v1',
      '--api-versions',
      'monitoring.coreos.com/v1/ServiceMonitor',
      '--show-only',
      'templates/metrics.yaml',
      ...HELM_TEMPLATE_KUBE_VERSION,
    ],
    kube,
  );
  return parseAllDocuments(out)
    .map((d) => d.toJSON() as unknown)
    .filter((d) => d !== null);
}

/** Endpoints discovery, into the file Prometheus reads: every EndpointSlice address, labelled with its Service's labels. */
async function discover(): Promise<void> {
  const services = z
    .object({
      items: z.array(
        z.object({ metadata: z.object({ name: z.string(), namespace: z.string(), labels: z.record(z.string(), z.string()).optional() }) }),
      ),
    })
    .parse(JSON.parse(await kubectl(['get', 'services', '-A', '-o', 'json'])));
  const labelsOf = new Map(services.items.map((s) => [`${s.metadata.namespace}/${s.metadata.name}`, s.metadata.labels ?? {}]));
  const slices = (JSON.parse(await kubectl(['get', 'endpointslices', '-A', '-o', 'json'])) as { items: unknown[] }).items.map(
    parseEndpointSlice,
  );
  writeFileSync(targetsFile, JSON.stringify(endpointTargetGroups(slices, (ns, svc) => labelsOf.get(`${ns}/${svc}`))));
}

/**
 * The node's sandboxd, hung: SIGSTOP to its process (found by the flags only its DaemonSet passes).
 * It keeps its port, its sandboxes and its pod, and answers nothing, as a wedged sandboxd does.
 * Returns what resumes it.
 */
function hangSandboxd(): () => void {
  const pids = readdirSync('/proc').filter((d) => {
    if (!/^\d+$/.test(d)) return false;
    try {
      const argv = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0');
      return argv.includes('--guest-closed-dirs=/dev/shm') && argv.includes('--token-file=/var/run/sandboxd/api-token');
    } catch {
      return false; // exited meanwhile
    }
  });
  expect(pids).toHaveLength(1);
  const pid = Number(pids[0]);
  process.kill(pid, 'SIGSTOP');
  return () => process.kill(pid, 'SIGCONT');
}

/**
 * A target Prometheus cannot reach: this machine drops what it sends to one pod's metrics port
 * (the pod stays Ready: its probes are on another port). Returns what lets it through again.
 */
async function cutMetrics(podIp: string): Promise<() => Promise<void>> {
  const rule = ['OUTPUT', '-d', podIp, '-p', 'tcp', '--dport', '8080', '-m', 'comment', '--comment', 'monitoring-e2e', '-j', 'DROP'];
  await runCommand('iptables', ['-w', '-I', ...rule]);
  return async () => void (await runCommand('iptables', ['-w', '-D', ...rule]));
}

interface Pod {
  metadata: { name: string };
  status?: { podIP?: string };
}
const podsOf = async (namespace: string, component: string): Promise<Pod[]> =>
  (
    JSON.parse(await kubectl(['-n', namespace, 'get', 'pods', '-l', `app.kubernetes.io/component=${component}`, '-o', 'json'])) as {
      items: Pod[];
    }
  ).items;

beforeAll(async () => {
  sut = await connectInstalled();
  const docs = await renderedMonitoring();
  monitors = docs.flatMap((d) => {
    const m = ServiceMonitorSchema.safeParse(d);
    return m.success ? [m.data] : [];
  });
  const rules = docs.flatMap((d) => {
    const r = PrometheusRuleSchema.safeParse(d);
    return r.success ? [stringify({ groups: r.data.spec.groups })] : [];
  });
  const dir = mkdtempSync(join(tmpdir(), 'monitoring-ca-'));
  targetsFile = join(dir, 'targets.json');
  await discover();
  const caFile = (namespace: string, secret: string, key: string): string => join(dir, `${namespace}-${secret}-${key}`);
  // the Secrets the monitors name for their CA, written where their scrape configurations read them
  for (const m of monitors)
    for (const ep of m.spec.endpoints) {
      const ca = ep.tlsConfig?.ca?.secret;
      if (ca === undefined) continue;
      const data = JSON.parse(await kubectl(['-n', m.metadata.namespace, 'get', 'secret', ca.name, '-o', 'json'])) as {
        data: Record<string, string>;
      };
      writeFileSync(caFile(m.metadata.namespace, ca.name, ca.key), Buffer.from(data.data[ca.key] ?? '', 'base64'));
    }
  const token = await sut.metricsReaderToken();
  prometheus = await startPrometheus({
    binDir: monitoringToolsDir(),
    job: 'unused',
    targets: [],
    token,
    scrapeIntervalSeconds: 2,
    scrapeConfigs: (tokenFile) =>
      monitors.flatMap((m) => scrapeConfigsOfServiceMonitor(m, { targetsFile, tokenFile, caFile, interval: '2s' })),
    rules,
  });
  // some traffic for every panel: a pool, claims bound from it, sandboxes read through the API
  await kubectl(['create', 'namespace', ns]);
  await kubectl(['apply', '-f', '-'], warmPoolList(ns, { image: 'ghcr.io/example/monitoring:1.0', replicas: 2, claims: ['m1', 'm2'] }));
  await eventually(
    async () => {
      const out = await kubectl(['-n', ns, 'get', 'sandboxes', '-o', 'name']);
      for (const c of ['m1', 'm2']) expect(out).toContain(`sandbox.agents.x-k8s.io/${c}`);
    },
    { timeoutMs: 120_000, intervalMs: 1000 },
  );
}, 300_000);

afterAll(async () => {
  await prometheus?.stop();
  await kubectl(['delete', 'namespace', ns, '--wait=false']).catch(() => '');
  await sut?.stop();
});

describe("the chart's monitoring, scraped by a real Prometheus as its ServiceMonitors say", () => {
  it('scrapes every pod of every app over HTTPS with the reader token, each target up', async () => {
    expect(monitors.map((m) => m.metadata.name).sort()).toEqual(
      ['claim-controller', 'inventory-publisher', 'sandbox-apiserver', 'warmpool-driver'].map((a) => `${INSTALLED_RELEASE}-${a}`),
    );
    const want = [...(await sut.metricsEndpoints()).keys()].length + sut.apiserverUrls.length;
    await eventually(
      async () => {
        await discover();
        const targets = await prometheus.targets();
        const down = targets.filter((t) => t.health !== 'up').map((t) => `${t.scrapeUrl}: ${t.health} ${t.lastError}`);
        expect(down).toEqual([]);
        expect(targets.length).toBe(want);
        for (const t of targets) {
          expect(t.scrapeUrl.startsWith('https://')).toBe(true);
          expect(t.labels.job).toMatch(new RegExp(`^${CHART_JOBS}$`));
        }
      },
      { timeoutMs: 90_000, intervalMs: 1000 },
    );
  });

  it("fills every panel of the chart's dashboard: each has a query that returns a series", async () => {
    const dashboard = DashboardSchema.parse(
      JSON.parse(readFileSync(join(REPO_ROOT, 'charts/sandbox-scale/files/grafana-dashboard.json'), 'utf8')),
    );
    expect(dashboard.panels.length).toBeGreaterThan(5);
    await eventually(
      async () => {
        const empty: string[] = [];
        for (const panel of dashboard.panels) {
          let series = 0;
          for (const t of panel.targets) series += (await prometheus.query(t.expr.replaceAll('$job', CHART_JOBS))).length;
          if (series === 0) empty.push(panel.title);
        }
        expect(empty).toEqual([]);
      },
      { timeoutMs: 120_000, intervalMs: 2000 },
    );
  });

  it("loads the chart's alert rules, with none firing on the healthy install", async () => {
    const groups = await eventually(
      async () => {
        const rules = await prometheus.rules();
        expect(rules.length).toBeGreaterThan(5);
        expect(rules.filter((x) => x.health !== 'ok')).toEqual([]);
        return rules;
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    expect(groups.map((r) => r.name)).toContain('SandboxScaleTargetDown');
    expect((await prometheus.alerts()).filter((a) => a.state === 'firing').map((a) => a.labels.alertname)).toEqual([]);
  });

  it("fires SandboxScaleNodeInventoryStale when the node's sandboxd hangs and SandboxScaleTargetDown when a controller cannot be scraped, then resolves both", async () => {
    const [publisher] = await podsOf(NODE_NAMESPACE, 'inventory-publisher');
    const [controller] = await podsOf(INSTALLED_NAMESPACE, 'claim-controller');
    if (publisher === undefined || controller?.status?.podIP === undefined) throw new Error('no publisher or claim-controller pod');
    const faults = [
      {
        alert: 'SandboxScaleNodeInventoryStale',
        fault: "the node's sandboxd hung (SIGSTOP)",
        namespace: NODE_NAMESPACE,
        pod: publisher.metadata.name,
      },
      {
        alert: 'SandboxScaleTargetDown',
        fault: "claim-controller's metrics port unreachable",
        namespace: INSTALLED_NAMESPACE,
        pod: controller.metadata.name,
      },
    ];
    // each alert's `for` as Prometheus loaded it: the chart's override the installed run sets (1m)
    const rules = await prometheus.rules();
    const forS = new Map(faults.map((f) => [f.alert, rules.find((r) => r.name === f.alert)?.duration]));
    for (const f of faults)
      expect(`${forS.get(f.alert)}s`).toBe(`${Number.parseInt(ALERT_OVERRIDES[f.alert as keyof typeof ALERT_OVERRIDES].for) * 60}s`);
    const started = Date.now();
    const resume = hangSandboxd();
    let reconnect: (() => Promise<void>) | undefined;
    const firedAt = new Map<string, number>();
    const activeAt = new Map<string, number>();
    try {
      reconnect = await cutMetrics(controller.status.podIP);
      await eventually(
        async () => {
          const alerts = await prometheus.alerts();
          for (const f of faults) {
            const a = alerts.find((x) => x.labels.alertname === f.alert && x.labels.pod === f.pod && x.labels.namespace === f.namespace);
            if (a?.activeAt !== undefined && !activeAt.has(f.alert)) activeAt.set(f.alert, Date.parse(a.activeAt));
            if (a?.state === 'firing' && !firedAt.has(f.alert)) firedAt.set(f.alert, Date.now());
          }
          expect(faults.filter((f) => !firedAt.has(f.alert)).map((f) => f.alert)).toEqual([]);
        },
        { timeoutMs: 10 * 60_000, intervalMs: 2000 },
      );
    } finally {
      resume();
      await reconnect?.();
    }
    const restored = Date.now();
    // the alerts name the pods the faults hit, and nothing else fired
    const firing = (await prometheus.alerts()).filter((a) => a.state === 'firing');
    expect(firing.map((a) => `${a.labels.alertname} ${a.labels.namespace}/${a.labels.pod}`).sort()).toEqual(
      faults.map((f) => `${f.alert} ${f.namespace}/${f.pod}`).sort(),
    );
    await eventually(async () => expect((await prometheus.alerts()).filter((a) => a.state === 'firing')).toEqual([]), {
      timeoutMs: 120_000,
      intervalMs: 1000,
    });
    const resolvedS = (Date.now() - restored) / 1000;
    const rows = faults.map((f) => {
      const pendingS = ((activeAt.get(f.alert) ?? NaN) - started) / 1000;
      const firingS = ((firedAt.get(f.alert) ?? NaN) - started) / 1000;
      // pending only after the fault, firing only once its `for` has passed since pending
      expect(pendingS).toBeGreaterThanOrEqual(-1);
      expect(firingS - pendingS).toBeGreaterThanOrEqual(forS.get(f.alert) ?? Infinity);
      return {
        alert: f.alert,
        fault: f.fault,
        for_s: forS.get(f.alert),
        pending_after_s: Number(pendingS.toFixed(1)),
        firing_after_s: Number(firingS.toFixed(1)),
      };
    });
    process.stderr.write(
      `${rows.map((r) => `${r.alert.padEnd(32)} ${r.fault.padEnd(46)} for ${r.for_s} s: pending ${r.pending_after_s} s, firing ${r.firing_after_s} s`).join('\n')}\nboth resolved ${resolvedS.toFixed(1)} s after the faults ended\n${JSON.stringify({ alerts: rows, resolved_s: resolvedS })}\n`,
    );
  });
});
