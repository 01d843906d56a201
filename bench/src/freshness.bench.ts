import { randomBytes } from 'node:crypto';
/**
 * bench:freshness — how long a change on a node (a sandbox hibernated or woken by its owner)
 * takes to reach a watcher of `sandboxes`, at 400 simulated nodes, and how many etcd writes per
 * second the fleet makes while it is idle. One inventory-publisher per node runs in-process under
 * the chart's ServiceAccount with a token bound to a pod on its node, telling sandbox-apiserver of
 * each change between publishes (docs/adr/0007); BENCH_NOTICES=0 runs the same fleet without
 * notices (changes show at the next publish). Prints a table, then ONE JSON line (the last line).
 *
 *   npx nx run bench:freshness            (BENCH_NODES=40 while iterating)
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { KubeConfig } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { z } from 'zod';
import {
  AppProcess,
  applyCrds,
  createCA,
  createLeaf,
  eventually,
  freePort,
  installChartAppRbac,
  requireHostAddress,
  startControlPlane,
  tokenKubeConfig,
} from '@sandbox-scale/e2e';
import { createInformer, createLogger, kubeRequest } from '@sandbox-scale/kube-runtime';
import { startPublisher, type RunningPublisher } from '@sandbox-scale/inventory-publisher';
import { startSandboxApiserver } from '@sandbox-scale/sandbox-apiserver';
import { RESOURCES, OwnerRefKey } from '@sandbox-scale/scale-core';
import { createSandboxdAgent, SandboxdClient } from '@sandbox-scale/sandboxd-client';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runBench } from './run-bench';

/** The key every process of this run proves claim references with. */
const CLAIM_REF_KEY = new OwnerRefKey(randomBytes(32));

const NODES = Number(process.env.BENCH_NODES ?? 400);
const PER_NODE = Number(process.env.BENCH_SANDBOXES_PER_NODE ?? 2);
const CHANGES = Number(process.env.BENCH_CHANGES ?? 400);
/** One change every this many ms, on a random node: a steady trickle, not a burst. */
const CHANGE_EVERY_MS = Number(process.env.BENCH_CHANGE_EVERY_MS ?? 50);
const PUBLISH_INTERVAL_MS = 5_000;
const NOTICE_INTERVAL_MS = 250;
const IDLE_WINDOW_MS = Number(process.env.BENCH_IDLE_WINDOW_MS ?? 20_000);
const NOTICES = process.env.BENCH_NOTICES !== '0';
const TOKEN = 'bench-fleet-token';
const IMAGE = 'bench/freshness:1';
const NS = 'sandbox-system';
const SERVICE = 'sandbox-apiserver';

const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0;
};
const round = (x: number, digits = 1): number => Number(x.toFixed(digits));

const ServedSchema = z.looseObject({
  metadata: z.looseObject({ name: z.string(), namespace: z.string().optional(), resourceVersion: z.string().optional() }),
  status: z.looseObject({ conditions: z.array(z.looseObject({ type: z.string(), reason: z.string().optional() })).optional() }).optional(),
});
type Served = z.infer<typeof ServedSchema>;
const reasonOf = (s: Served): string => s.status?.conditions?.find((c) => c.type === 'Ready')?.reason ?? '';

interface SimNode {
  readonly name: string;
  readonly url: string;
  readonly addr: string;
}

/**
 * The nodes' sandboxd in a process of their own (as sandboxd is on a node), so the reads the
 * publishers make are served off this process's event loop.
 */
async function startSimProcess(): Promise<{ nodes: SimNode[]; stop: () => Promise<void> }> {
  let resolveNodes: (n: SimNode[]) => void = () => undefined;
  const ready = new Promise<SimNode[]>((res) => (resolveNodes = res));
  const sim = new AppProcess({
    name: 'sandboxd-sim',
    entry: 'apps/sandboxd-sim/src/main.ts',
    args: [
      '--nodes',
      String(NODES),
      '--base-port',
      '0',
      '--speed',
      '0',
      '--name-prefix',
      'node-',
      '--mesh=false',
      '--log-level',
      'warn',
      '--pools',
      JSON.stringify([{ template: IMAGE, warm: PER_NODE + 1 }]),
    ],
    env: { SANDBOX_SCALE_TOKEN: TOKEN },
    logPath: join(tmpdir(), 'bench-freshness-sim.log'),
    onStdoutLine: (line) => {
      if (line.startsWith('{"nodes"')) resolveNodes((JSON.parse(line) as { nodes: SimNode[] }).nodes);
    },
  });
  const exited = sim.exited.then((code): SimNode[] => {
    throw new Error(`sandboxd-sim exited with ${code} before listening (see ${join(tmpdir(), 'bench-freshness-sim.log')})`);
  });
  return { nodes: await Promise.race([ready, exited]), stop: () => sim.stop() };
}

/** etcd's revision now: every write to etcd moves it by one (read as a list's resourceVersion). */
async function etcdRevision(kc: KubeConfig): Promise<number> {
  const list = (await kubeRequest(kc, { method: 'GET', path: '/api/v1/namespaces/default/configmaps', query: { limit: 1 } })) as {
    metadata?: { resourceVersion?: string };
  };
  return Number(list.metadata?.resourceVersion ?? NaN);
}

/** Mean and p99 bucket of sandbox-apiserver's notice age histogram (node read -> applied). */
async function noticeAge(registry: Registry): Promise<{ meanMs: number; p99LeMs: number }> {
  const m = registry.getSingleMetric('sandbox_scale_apiserver_node_notice_age_seconds');
  // a histogram's values name their series (_bucket, _sum, _count); the MetricValue type leaves it out
  const values = (m === undefined ? [] : (await m.get()).values).map((v) => ({
    ...v,
    metricName: 'metricName' in v && typeof v.metricName === 'string' ? v.metricName : '',
  }));
  const count = values.find((v) => v.metricName.endsWith('_count'))?.value ?? 0;
  const sum = values.find((v) => v.metricName.endsWith('_sum'))?.value ?? 0;
  const buckets = values
    .filter((v) => v.metricName.endsWith('_bucket'))
    .map((v) => ({ le: Number(v.labels.le), n: v.value }))
    .sort((a, b) => a.le - b.le);
  const p99 = buckets.find((b) => b.n >= 0.99 * count)?.le ?? 0;
  return { meanMs: count === 0 ? 0 : round((sum / count) * 1000), p99LeMs: Number.isFinite(p99) ? p99 * 1000 : -1 };
}

async function main(): Promise<void> {
  const log = createLogger({ name: 'bench-freshness', level: process.env.LOG_LEVEL ?? 'silent' });
  const cp = await startControlPlane({ controllerManager: false });
  const kc = cp.kubeConfig;
  // installChartAppRbac renders the chart with the helm of the tools dir the e2e helpers read from here
  process.env.SANDBOX_SCALE_TEST_BIN_DIR ??= cp.binDir;
  process.env.SANDBOX_SCALE_TEST_KUBECONFIG ??= cp.kubeconfigPath;
  const sim = await startSimProcess();
  const dispatcher = createSandboxdAgent();
  const publishers: RunningPublisher[] = [];
  try {
    await applyCrds(kc, 'charts/sandbox-scale/crds');
    await kubeRequest(kc, {
      method: 'POST',
      path: '/api/v1/namespaces',
      body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
    });
    const identity = await installChartAppRbac(kc, 'inventory-publisher', {
      release: 'bench',
      namespace: NS,
      set: ['inventoryPublisher.notices.enabled=true'],
    });
    const sa = identity.username.split(':').pop() ?? '';

    // each node: a Node, the publisher's pod on it and a token bound to that pod, as the kubelet mounts it
    const nodeName = (i: number): string => `fresh-${sim.nodes[i]?.name ?? i}`;
    const tokens: string[] = [];
    const t0 = performance.now();
    for (let i = 0; i < NODES; i++) {
      await kubeRequest(kc, {
        method: 'POST',
        path: '/api/v1/nodes',
        body: { apiVersion: 'v1', kind: 'Node', metadata: { name: nodeName(i) } },
      });
      const pod = (await kubeRequest(kc, {
        method: 'POST',
        path: `/api/v1/namespaces/${NS}/pods`,
        body: {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: `publisher-${i}` },
          spec: {
            nodeName: nodeName(i),
            serviceAccountName: sa,
            automountServiceAccountToken: false,
            containers: [{ name: 'publisher', image: 'registry.local/inventory-publisher:bench' }],
          },
        },
      })) as { metadata: { uid: string } };
      const tr = (await kubeRequest(kc, {
        method: 'POST',
        path: `/api/v1/namespaces/${NS}/serviceaccounts/${sa}/token`,
        body: {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenRequest',
          spec: {
            expirationSeconds: 3600,
            boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: `publisher-${i}`, uid: pod.metadata.uid },
          },
        },
      })) as { status: { token: string } };
      tokens.push(tr.status.token);
    }
    const setupS = (performance.now() - t0) / 1000;

    // sandboxes: PER_NODE claimed on every node, served as team-<n>/sb-<node>-<i>
    const clients = sim.nodes.map((n) => new SandboxdClient({ baseUrl: n.url, token: TOKEN, dispatcher }));
    const ids: string[][] = [];
    for (let i = 0; i < NODES; i++) {
      const c = clients[i] as SandboxdClient;
      await eventually(async () => {
        if (((await c.info()).pools[0]?.warm ?? 0) < PER_NODE) throw new Error(`node ${i} has not booted its warm pool`);
      });
      const row: string[] = [];
      for (let s = 0; s < PER_NODE; s++) row.push((await c.claim({ template: IMAGE, claimRef: `team-${s}/sb-${i}-${s}` })).id);
      ids.push(row);
    }

    const ca = await createCA('bench-freshness-ca');
    const leaf = await createLeaf(ca, {
      commonName: SERVICE,
      dnsNames: [`${SERVICE}.${NS}.svc`, 'localhost'],
      ips: ['127.0.0.1'],
      server: true,
    });
    const certFile = join(tmpdir(), 'bench-freshness.crt');
    const keyFile = join(tmpdir(), 'bench-freshness.key');
    writeFileSync(certFile, leaf.cert);
    writeFileSync(keyFile, leaf.key);
    const port = await freePort();
    const serverRegistry = new Registry();
    const server = await startSandboxApiserver({
      claimRefKey: CLAIM_REF_KEY,
      kubeConfig: kc,
      securePort: port,
      bindAddress: '0.0.0.0',
      tlsCertFile: certFile,
      tlsPrivateKeyFile: keyFile,
      serviceName: SERVICE,
      serviceNamespace: NS,
      fleetToken: TOKEN,
      log,
      registry: serverRegistry,
      ...(NOTICES ? { noticePublisher: identity.username } : {}),
    });
    await server.synced;
    await kubeRequest(kc, {
      method: 'POST',
      path: `/apis/discovery.k8s.io/v1/namespaces/${NS}/endpointslices`,
      body: {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { name: `${SERVICE}-bench`, labels: { 'kubernetes.io/service-name': SERVICE } },
        addressType: 'IPv4',
        endpoints: [{ addresses: [requireHostAddress()], conditions: { ready: true } }],
        ports: [{ name: 'https', port, protocol: 'TCP' }],
      },
    });

    const registry = new Registry();
    for (let i = 0; i < NODES; i++) {
      const n = sim.nodes[i];
      if (n === undefined) continue;
      publishers.push(
        startPublisher({
          nodeName: nodeName(i),
          sandboxdUrl: n.url,
          advertiseAddress: n.addr,
          publishIntervalMs: PUBLISH_INTERVAL_MS,
          noticeIntervalMs: NOTICE_INTERVAL_MS,
          fleetToken: TOKEN,
          kubeConfig: tokenKubeConfig(kc, tokens[i] ?? ''),
          log,
          registry,
          dispatcher,
          ...(NOTICES ? { notices: { service: { namespace: NS, name: SERVICE }, caPem: ca.cert } } : {}),
        }),
      );
    }

    // the watcher: straight to sandbox-apiserver as the admin (client certificate)
    const admin = kc.getCurrentUser();
    const direct = new KubeConfig();
    direct.loadFromOptions({
      clusters: [{ name: 'direct', server: `https://127.0.0.1:${port}`, caData: Buffer.from(ca.cert).toString('base64') }],
      users: [
        { name: 'admin', ...(admin?.certData ? { certData: admin.certData } : {}), ...(admin?.keyData ? { keyData: admin.keyData } : {}) },
      ],
      contexts: [{ name: 'direct', cluster: 'direct', user: 'admin' }],
      currentContext: 'direct',
    });
    const waiting = new Map<string, (at: number) => void>();
    const seen = (s: Served): void => {
      const at = performance.now();
      const key = `${s.metadata.namespace ?? ''}/${s.metadata.name} ${reasonOf(s)}`;
      waiting.get(key)?.(at);
      waiting.delete(key);
    };
    const served = new Set<string>();
    const watcher = createInformer<Served>(direct, { resource: RESOURCES.sandbox, parse: (o) => ServedSchema.parse(o), log });
    watcher.on({ add: (s) => (served.add(s.metadata.name), seen(s)), update: seen });
    watcher.start();
    await eventually(
      () => {
        if (served.size < NODES * PER_NODE) throw new Error(`${served.size} of ${NODES * PER_NODE} sandboxes served`);
        if (NOTICES && publishers.some((p) => p.noticeTargets().length !== 1)) throw new Error('publishers do not see the replica yet');
      },
      { timeoutMs: Number(process.env.BENCH_SYNC_TIMEOUT_MS ?? 180_000), intervalMs: 500 },
    );

    // changes: hibernate or wake one sandbox of a random node, timed to its watch event
    const phase = ids.map((row) => row.map(() => 'Running'));
    const staleness: number[] = [];
    let missed = 0;
    const writesBefore = publishers.reduce((a, p) => a + p.publisher.writes, 0);
    const active0 = performance.now();
    const pending: Promise<void>[] = [];
    // a sandbox is changed again only once its last change was seen: two changes within one read
    // of its node would show as none (the node's state is read, not its history)
    const busy = new Set<string>();
    const lag = monitorEventLoopDelay({ resolution: 10 });
    lag.enable();
    for (let k = 0; k < CHANGES; k++) {
      const i = Math.floor(Math.random() * NODES);
      const s = Math.floor(Math.random() * PER_NODE);
      if (busy.has(`${i}/${s}`)) {
        k--;
        await new Promise((r) => setTimeout(r, CHANGE_EVERY_MS));
        continue;
      }
      const id = ids[i]?.[s] ?? '';
      const row = phase[i] as string[];
      const next = row[s] === 'Running' ? 'Hibernated' : 'Running';
      const key = `team-${s}/sb-${i}-${s} ${next}`;
      row[s] = next;
      busy.add(`${i}/${s}`);
      const c = clients[i] as SandboxdClient;
      const start = performance.now();
      pending.push(
        new Promise<void>((resolve) => {
          const timer = setTimeout(() => {
            waiting.delete(key);
            busy.delete(`${i}/${s}`);
            missed++;
            resolve();
          }, 30_000);
          waiting.set(key, (at) => {
            clearTimeout(timer);
            staleness.push(at - start);
            busy.delete(`${i}/${s}`);
            resolve();
          });
        }),
      );
      await (next === 'Hibernated' ? c.hibernate(id) : c.wake(id));
      await new Promise((r) => setTimeout(r, CHANGE_EVERY_MS));
    }
    await Promise.all(pending);
    lag.disable();
    const activeS = (performance.now() - active0) / 1000;
    const age = await noticeAge(serverRegistry);
    const activeWrites = publishers.reduce((a, p) => a + p.publisher.writes, 0) - writesBefore;

    // idle: the last changes published, then nothing changes for a window
    await new Promise((r) => setTimeout(r, PUBLISH_INTERVAL_MS * 1.2));
    const rev0 = await etcdRevision(kc);
    const idleWrites0 = publishers.reduce((a, p) => a + p.publisher.writes, 0);
    const idle0 = performance.now();
    await new Promise((r) => setTimeout(r, IDLE_WINDOW_MS));
    const idleS = (performance.now() - idle0) / 1000;
    const idleEtcdWrites = (await etcdRevision(kc)) - rev0;
    const idlePublishes = publishers.reduce((a, p) => a + p.publisher.writes, 0) - idleWrites0;

    const result = {
      nodes: NODES,
      sandboxes: NODES * PER_NODE,
      notices: NOTICES,
      changes: staleness.length,
      missed,
      staleness_p50_ms: round(quantile(staleness, 0.5)),
      staleness_p99_ms: round(quantile(staleness, 0.99)),
      staleness_max_ms: round(Math.max(0, ...staleness)),
      notice_read_to_applied_mean_ms: age.meanMs,
      notice_read_to_applied_p99_le_ms: age.p99LeMs,
      bench_event_loop_delay_p99_ms: round(lag.percentile(99) / 1e6),
      active_inventory_writes_per_s: round(activeWrites / activeS, 2),
      idle_etcd_writes_per_s: round(idleEtcdWrites / idleS, 2),
      idle_inventory_writes_per_s: round(idlePublishes / idleS, 2),
      write_goal_per_s: round(NODES / (PUBLISH_INTERVAL_MS / 1000) + 1, 1),
    };
    console.log(
      `freshness: ${NODES} simulated nodes, ${PER_NODE} sandboxes each, publish every ${PUBLISH_INTERVAL_MS / 1000} s,`,
      NOTICES ? `notices every ${NOTICE_INTERVAL_MS} ms` : 'no notices',
      `(setup of nodes, pods and bound tokens: ${setupS.toFixed(1)} s)`,
    );
    console.table([
      { figure: 'changes timed (hibernate/wake)', value: result.changes },
      { figure: 'changes never seen by the watch (30 s)', value: result.missed },
      { figure: 'staleness p50 (ms, node change -> watch event)', value: result.staleness_p50_ms },
      { figure: 'staleness p99 (ms)', value: result.staleness_p99_ms },
      { figure: 'staleness max (ms)', value: result.staleness_max_ms },
      {
        figure: 'event-loop delay p99 of this process (ms: publishers + apiserver + watcher)',
        value: result.bench_event_loop_delay_p99_ms,
      },
      { figure: 'NodeInventory writes/s while changing', value: result.active_inventory_writes_per_s },
      { figure: 'etcd writes/s while idle (all of etcd)', value: result.idle_etcd_writes_per_s },
      { figure: 'NodeInventory writes/s while idle', value: result.idle_inventory_writes_per_s },
      { figure: 'goal: writes/s at most (nodes / publish interval + 1)', value: result.write_goal_per_s },
    ]);
    if (result.missed > 0 || result.changes === 0) process.exitCode = 1;
    await watcher.stop();
    await Promise.all(publishers.map((p) => p.stop()));
    publishers.length = 0;
    await server.stop();
    await Promise.all(clients.map((c) => c.close()));
    console.log(JSON.stringify(result));
  } finally {
    await Promise.all(publishers.map((p) => p.stop()));
    await sim.stop();
    await cp.stop();
  }
}

runBench(main);
