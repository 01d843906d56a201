/**
 * sandbox-scale beside kubernetes-sigs/agent-sandbox, in one run, through one harness: a
 * SandboxClaim (the same kind and fields, extensions.agents.x-k8s.io/v1beta1, `warmPoolRef`)
 * created, and watched until its Ready condition is True, with a warm pool of 60 behind it.
 *
 * - agent-sandbox: its controller (`--extensions`) built by `npm run tools -- upstream` from the Go
 *   module proxy at the release versions.json pins, run as a process against a control plane of
 *   its own with a real node on this machine (kubelet, containerd), its CRDs from the same module;
 *   its warm pool holds Pods of the node's locally built pause image. Every client here speaks
 *   v1beta1, the CRDs' storage version, so their conversion webhook is set to None and the
 *   controller runs with `--enable-webhook=false`. Needs root (the node).
 * - sandbox-scale: the local system as `npm start` runs it (3 simulated nodes, the apps as
 *   processes), on a control plane of its own.
 *
 * Measured on each: at concurrency 1, N claims one after another (claim -> Ready p50/p99); at
 * concurrency 50, one burst of 50 (p50/p99, claims/s from the first create to the last Ready); the
 * API writes per claim (kube-apiserver's mutating requests from the first create until the pool is
 * full again, less the idle rate measured just before); the objects etcd holds per sandbox (keys
 * under /registry with the claims held and the pool full, less before). Prints a table, then ONE
 * JSON line (the last line). Figures only: nothing passes or fails on time; a claim that never
 * becomes Ready fails the run.
 *
 *   sudo npx nx run bench:upstream          (UPSTREAM_N=20 for a shorter run)
 */
import { CoreV1Api, CustomObjectsApi, Watch, type KubeConfig } from '@kubernetes/client-node';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { kubeApiClient } from '@sandbox-scale/kube-runtime';
import { startControlPlane, type ControlPlane } from '../../e2e/src/control-plane/control-plane';
import { freePort } from '../../e2e/src/control-plane/ports';
import { ProcessGroup } from '../../e2e/src/control-plane/process-group';
import { toolPath, upstreamToolsDir } from '../../e2e/src/control-plane/tools';
import { pauseImage } from '../../e2e/src/images/images';
import { startLocalSystem } from '../../e2e/src/system/local-system';
import { runCommand } from '../../e2e/src/system/run-command';
import { eventually } from '../../e2e/src/testing/eventually';
import { runBench } from './run-bench';

const N = Number(process.env.UPSTREAM_N ?? 40);
const BURST = 50;
const POOL_REPLICAS = 60;
const NS = 'bench-upstream';
const POOL = 'agent';
const EXT = { group: 'extensions.agents.x-k8s.io', version: 'v1beta1' };
const log = (m: string): void => void process.stderr.write(`[upstream] ${m}\n`);

function pct(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
}

/** What one side measured. */
interface Column {
  c1: { p50: number; p99: number };
  c50: { p50: number; p99: number; claimsPerS: number };
  writesPerClaim: number;
  etcdObjectsPerSandbox: number;
}

/** Where a side runs: its API, its etcd, and how to stop it. */
interface Side {
  name: string;
  kubeConfig: KubeConfig;
  kubeconfigPath: string;
  binDir: string;
  etcdUrl: string;
  /** The warm pool's container image. */
  image: string;
  stop(): Promise<void>;
}

/** Keys etcd holds under /registry (everything kube-apiserver stores), through etcd's JSON gateway. */
async function etcdObjects(etcdUrl: string): Promise<number> {
  const b64 = (s: string): string => Buffer.from(s).toString('base64');
  const r = await fetch(`${etcdUrl}/v3/kv/range`, {
    method: 'POST',
    body: JSON.stringify({ key: b64('/registry/'), range_end: b64('/registry0'), count_only: true }),
  });
  const body = (await r.json()) as { count?: string };
  return Number(body.count ?? 0);
}

/** kube-apiserver's mutating requests so far (apiserver_request_total, POST/PUT/PATCH/DELETE/DELETECOLLECTION). */
async function apiWrites(side: Side): Promise<number> {
  const text = await runCommand(toolPath(side.binDir, 'kubectl'), ['get', '--raw', '/metrics'], { KUBECONFIG: side.kubeconfigPath });
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    if (!/verb="(POST|PUT|PATCH|DELETE|DELETECOLLECTION)"/.test(line)) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/** One SandboxTemplate and SandboxWarmPool, the same objects on both sides. */
async function applyPool(side: Side): Promise<void> {
  await kubeApiClient(side.kubeConfig, CoreV1Api).createNamespace({ body: { metadata: { name: NS } } });
  const custom = kubeApiClient(side.kubeConfig, CustomObjectsApi);
  const container = { name: 'agent', image: side.image, imagePullPolicy: 'IfNotPresent' };
  const objects: [string, string, object][] = [
    ['sandboxtemplates', 'SandboxTemplate', { podTemplate: { spec: { containers: [container] } } }],
    ['sandboxwarmpools', 'SandboxWarmPool', { replicas: POOL_REPLICAS, sandboxTemplateRef: { name: POOL } }],
  ];
  for (const [plural, kind, spec] of objects)
    await custom.createNamespacedCustomObject({
      ...EXT,
      namespace: NS,
      plural,
      body: { apiVersion: `${EXT.group}/${EXT.version}`, kind, metadata: { name: POOL, namespace: NS }, spec },
    });
}

/** The pool back to full: every replica Ready. */
async function poolFull(side: Side, timeoutMs = 300_000): Promise<void> {
  const custom = kubeApiClient(side.kubeConfig, CustomObjectsApi);
  await eventually(
    async () => {
      const pool = (await custom.getNamespacedCustomObject({ ...EXT, namespace: NS, plural: 'sandboxwarmpools', name: POOL })) as {
        status?: { readyReplicas?: number };
      };
      const ready = pool.status?.readyReplicas ?? 0;
      if (ready < POOL_REPLICAS) throw new Error(`${side.name}: pool ready ${ready}/${POOL_REPLICAS}`);
    },
    { timeoutMs, intervalMs: 500 },
  );
}

/** Claims created here, each resolved when a watch sees its Ready condition True. */
class ReadyWatch {
  private readonly waiting = new Map<string, (at: number) => void>();
  private readonly readyAt = new Map<string, number>();
  private abort: { abort(): void } | undefined;

  async start(kc: KubeConfig): Promise<void> {
    this.abort = await new Watch(kc).watch(
      `/apis/${EXT.group}/${EXT.version}/namespaces/${NS}/sandboxclaims`,
      {},
      (_type: string, obj: { metadata?: { name?: string }; status?: { conditions?: { type: string; status: string }[] } }) => {
        const name = obj.metadata?.name;
        if (!name || this.readyAt.has(name)) return;
        if (!obj.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) return;
        const at = performance.now();
        this.readyAt.set(name, at);
        this.waiting.get(name)?.(at);
      },
      () => undefined,
    );
  }

  ready(name: string, timeoutMs = 120_000): Promise<number> {
    const at = this.readyAt.get(name);
    if (at !== undefined) return Promise.resolve(at);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`claim ${name} not Ready after ${timeoutMs} ms`)), timeoutMs);
      this.waiting.set(name, (t) => {
        clearTimeout(timer);
        resolve(t);
      });
    });
  }

  stop(): void {
    this.abort?.abort();
  }
}

async function createClaim(custom: CustomObjectsApi, name: string): Promise<void> {
  await custom.createNamespacedCustomObject({
    ...EXT,
    namespace: NS,
    plural: 'sandboxclaims',
    body: {
      apiVersion: `${EXT.group}/${EXT.version}`,
      kind: 'SandboxClaim',
      metadata: { name, namespace: NS },
      spec: { warmPoolRef: { name: POOL } },
    },
  });
}

/**
 * Deletes every claim and waits until none is left, no pod of the namespace is still terminating
 * (agent-sandbox's released sandboxes), and the pool is full again: each phase starts quiet.
 */
async function releaseAll(side: Side): Promise<void> {
  const custom = kubeApiClient(side.kubeConfig, CustomObjectsApi);
  const core = kubeApiClient(side.kubeConfig, CoreV1Api);
  await custom.deleteCollectionNamespacedCustomObject({ ...EXT, namespace: NS, plural: 'sandboxclaims' });
  await eventually(
    async () => {
      const left = (await custom.listNamespacedCustomObject({ ...EXT, namespace: NS, plural: 'sandboxclaims' })) as { items: unknown[] };
      if (left.items.length) throw new Error(`${side.name}: ${left.items.length} claims left`);
    },
    { timeoutMs: 300_000, intervalMs: 500 },
  );
  await eventually(
    async () => {
      const terminating = (await core.listNamespacedPod({ namespace: NS })).items.filter((p) => p.metadata?.deletionTimestamp);
      if (terminating.length) throw new Error(`${side.name}: ${terminating.length} pods terminating`);
    },
    { timeoutMs: 300_000, intervalMs: 500 },
  );
  await poolFull(side);
}

/** Times `names` claimed `concurrency` at a time: each claim's create -> Ready, and the whole. */
async function claimAll(side: Side, watch: ReadyWatch, names: string[], concurrency: number): Promise<{ ms: number[]; wallMs: number }> {
  const custom = kubeApiClient(side.kubeConfig, CustomObjectsApi);
  const ms: number[] = [];
  const queue = [...names];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let name = queue.shift(); name !== undefined; name = queue.shift()) {
        const start = performance.now();
        await createClaim(custom, name);
        ms.push((await watch.ready(name)) - start);
      }
    }),
  );
  return { ms: ms.sort((a, b) => a - b), wallMs: performance.now() - t0 };
}

async function measure(side: Side): Promise<Column> {
  await applyPool(side);
  await poolFull(side);
  const watch = new ReadyWatch();
  await watch.start(side.kubeConfig);
  try {
    // a few claims first, so neither side is timed on its first
    await claimAll(side, watch, ['warm-0', 'warm-1', 'warm-2'], 1);
    await releaseAll(side);

    // the idle rate of writes (leases, node status, inventories): what would have been written anyway
    const idleFrom = await apiWrites(side);
    const idleT0 = performance.now();
    await new Promise((r) => setTimeout(r, 10_000));
    const idlePerMs = ((await apiWrites(side)) - idleFrom) / (performance.now() - idleT0);

    const objectsBefore = await etcdObjects(side.etcdUrl);
    const writesBefore = await apiWrites(side);
    const w0 = performance.now();
    const c1 = await claimAll(
      side,
      watch,
      Array.from({ length: N }, (_, i) => `c1-${i}`),
      1,
    );
    await poolFull(side);
    const writes = (await apiWrites(side)) - writesBefore - idlePerMs * (performance.now() - w0);
    const objects = (await etcdObjects(side.etcdUrl)) - objectsBefore;
    await releaseAll(side);

    const c50 = await claimAll(
      side,
      watch,
      Array.from({ length: BURST }, (_, i) => `c50-${i}`),
      BURST,
    );
    await releaseAll(side);
    return {
      c1: { p50: pct(c1.ms, 50), p99: pct(c1.ms, 99) },
      c50: { p50: pct(c50.ms, 50), p99: pct(c50.ms, 99), claimsPerS: BURST / (c50.wallMs / 1000) },
      writesPerClaim: writes / N,
      etcdObjectsPerSandbox: objects / N,
    };
  } finally {
    watch.stop();
  }
}

/** The module's directory in the Go module cache (npm run tools -- upstream downloaded it). */
function agentSandboxModuleDir(): string {
  const versions = JSON.parse(readFileSync(join(__dirname, '../../e2e/tools/versions.json'), 'utf8')) as { agentSandbox: string };
  const out = execFileSync('go', ['mod', 'download', '-json', `sigs.k8s.io/agent-sandbox@${versions.agentSandbox}`], {
    encoding: 'utf8',
    cwd: tmpdir(),
  });
  return (JSON.parse(out) as { Dir: string }).Dir;
}

/** agent-sandbox's CRDs from its module, with conversion set to None (every client here speaks the storage version). */
function upstreamCrds(): string {
  const dir = join(agentSandboxModuleDir(), 'k8s', 'crds');
  const docs: string[] = [];
  for (const f of readdirSync(dir)
    .filter((n) => n.endsWith('.yaml'))
    .sort()) {
    for (const d of parseAllDocuments(readFileSync(join(dir, f), 'utf8'))) {
      const crd = d.toJSON() as { spec?: { conversion?: unknown } } | null;
      if (crd?.spec === undefined) continue;
      crd.spec.conversion = { strategy: 'None' };
      docs.push(stringify(crd));
    }
  }
  return docs.join('---\n');
}

async function startUpstream(): Promise<Side> {
  if (process.getuid?.() !== 0) throw new Error('bench:upstream runs agent-sandbox on a real node on this machine: run it as root');
  const binDir = upstreamToolsDir();
  const cp: ControlPlane = await startControlPlane({ node: true, log });
  const group = new ProcessGroup(mkdtempSync(join(tmpdir(), 'agent-sandbox-')));
  try {
    await runCommand(
      toolPath(cp.binDir, 'kubectl'),
      ['apply', '--server-side', '-f', '-'],
      { KUBECONFIG: cp.kubeconfigPath },
      upstreamCrds(),
    );
    await runCommand(toolPath(cp.binDir, 'kubectl'), ['wait', '--for=condition=Established', 'crd', '--all', '--timeout=60s'], {
      KUBECONFIG: cp.kubeconfigPath,
    });
    const [metrics, probes] = [await freePort(), await freePort()];
    let exited: string | undefined;
    group.start(
      'agent-sandbox-controller',
      toolPath(binDir, 'agent-sandbox-controller'),
      [
        `--kubeconfig=${cp.kubeconfigPath}`,
        '--extensions',
        '--leader-elect=false',
        '--enable-webhook=false',
        `--metrics-bind-address=127.0.0.1:${metrics}`,
        `--health-probe-bind-address=127.0.0.1:${probes}`,
      ],
      (code, logPath) => (exited = `agent-sandbox-controller exited with ${code} (log: ${logPath})`),
    );
    await eventually(
      async () => {
        if (exited !== undefined) throw new Error(exited);
        const r = await fetch(`http://127.0.0.1:${probes}/readyz`);
        if (r.status !== 200) throw new Error(`agent-sandbox-controller /readyz ${r.status}`);
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    return {
      name: 'agent-sandbox',
      kubeConfig: cp.kubeConfig,
      kubeconfigPath: cp.kubeconfigPath,
      binDir: cp.binDir,
      etcdUrl: cp.etcdUrl,
      image: pauseImage(cp.binDir).name,
      async stop() {
        await group.stop();
        await cp.stop();
      },
    };
  } catch (err) {
    await group.stop();
    await cp.stop();
    throw err;
  }
}

async function startOurs(): Promise<Side> {
  const cp = await startControlPlane({ log });
  const sys = await startLocalSystem({ controlPlane: cp, examples: false, publishInterval: '1s', log });
  return {
    name: 'sandbox-scale',
    kubeConfig: cp.kubeConfig,
    kubeconfigPath: cp.kubeconfigPath,
    binDir: cp.binDir,
    etcdUrl: cp.etcdUrl,
    image: 'registry.local/bench-upstream:1',
    async stop() {
      await sys.stop();
      await cp.stop();
    },
  };
}

async function run(start: () => Promise<Side>): Promise<Column> {
  const side = await start();
  try {
    log(`measuring ${side.name}`);
    return await measure(side);
  } finally {
    await side.stop();
  }
}

async function main(): Promise<void> {
  const upstream = await run(startUpstream);
  const ours = await run(startOurs);
  const ratio = (a: number, b: number): number => Number((a / b).toFixed(3));
  const f = (n: number, d = 1): string => n.toFixed(d);
  const rows: [string, string, string, string][] = [
    ['concurrency 1: claim -> Ready p50 ms', f(upstream.c1.p50), f(ours.c1.p50), f(ours.c1.p50 / upstream.c1.p50, 3)],
    ['concurrency 1: p99 ms', f(upstream.c1.p99), f(ours.c1.p99), f(ours.c1.p99 / upstream.c1.p99, 3)],
    ['concurrency 50: p50 ms', f(upstream.c50.p50), f(ours.c50.p50), f(ours.c50.p50 / upstream.c50.p50, 3)],
    ['concurrency 50: p99 ms', f(upstream.c50.p99), f(ours.c50.p99), f(ours.c50.p99 / upstream.c50.p99, 3)],
    ['concurrency 50: claims/s', f(upstream.c50.claimsPerS), f(ours.c50.claimsPerS), f(ours.c50.claimsPerS / upstream.c50.claimsPerS, 2)],
    ['API writes per claim', f(upstream.writesPerClaim), f(ours.writesPerClaim), f(ours.writesPerClaim / upstream.writesPerClaim, 3)],
    [
      'etcd objects per sandbox',
      f(upstream.etcdObjectsPerSandbox),
      f(ours.etcdObjectsPerSandbox),
      f(ours.etcdObjectsPerSandbox / upstream.etcdObjectsPerSandbox, 3),
    ],
  ];
  console.log(`${N} claims one at a time, then ${BURST} at once, a warm pool of ${POOL_REPLICAS} on each side`);
  console.log(`${'measure'.padEnd(40)} ${'agent-sandbox'.padStart(14)} ${'sandbox-scale'.padStart(14)} ${'ours ÷ theirs'.padStart(14)}`);
  for (const [m, a, b, r] of rows) console.log(`${m.padEnd(40)} ${a.padStart(14)} ${b.padStart(14)} ${r.padStart(14)}`);
  console.log(
    JSON.stringify({
      bench: 'upstream',
      n: N,
      burst: BURST,
      ours_p50_ms: Number(f(ours.c1.p50, 2)),
      ours_p99_ms: Number(f(ours.c1.p99, 2)),
      upstream_p50_ms: Number(f(upstream.c1.p50, 2)),
      upstream_p99_ms: Number(f(upstream.c1.p99, 2)),
      ratio_p50: ratio(ours.c1.p50, upstream.c1.p50),
      ratio_p99: ratio(ours.c1.p99, upstream.c1.p99),
      c50: {
        ours_p50_ms: Number(f(ours.c50.p50, 2)),
        upstream_p50_ms: Number(f(upstream.c50.p50, 2)),
        ratio_p50: ratio(ours.c50.p50, upstream.c50.p50),
        ratio_p99: ratio(ours.c50.p99, upstream.c50.p99),
        ours_claims_per_s: Number(f(ours.c50.claimsPerS, 2)),
        upstream_claims_per_s: Number(f(upstream.c50.claimsPerS, 2)),
      },
      claims_per_s_ratio: ratio(ours.c50.claimsPerS, upstream.c50.claimsPerS),
      ours_writes_per_claim: Number(f(ours.writesPerClaim, 2)),
      upstream_writes_per_claim: Number(f(upstream.writesPerClaim, 2)),
      ours_etcd_objects_per_sandbox: Number(f(ours.etcdObjectsPerSandbox, 2)),
      upstream_etcd_objects_per_sandbox: Number(f(upstream.etcdObjectsPerSandbox, 2)),
    }),
  );
}

runBench(main);
