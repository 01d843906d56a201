/**
 * A claimed sandbox's data plane through the Kubernetes API against the node itself, in one run
 * on one local system (kube-apiserver, its aggregator, sandbox-apiserver and a simulated node
 * with its data plane on):
 * - exec: `POST sandboxes/{name}/exec` through kube-apiserver against sandboxd's own
 *   `POST /v1/sandboxes/{id}/exec` with the sandbox's token, one at a time (p50/p99) and at
 *   concurrency 16 (execs/s);
 * - files: `PUT` then `GET sandboxes/{name}/files` of a 1 MiB and a 64 MiB file against the same
 *   bytes written and read over the node's agent relay (fs_write/fs_read), in MB/s.
 * Beside them, the floor of any request through the aggregator: a GET of the same sandbox.
 * Every read is compared with what was written, and every exec's output with what it printed: a
 * wrong result sets the exit code. Prints a table, then ONE JSON line (the last line). Figures
 * only: nothing passes or fails on time.
 *
 *   npx nx run bench:exec            (EXEC_N=100 for a shorter run)
 */
import { randomBytes } from 'node:crypto';
import { Agent, request, type RequestOptions } from 'node:https';
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { eventually } from '@sandbox-scale/e2e';
import { startLocalSystem } from '../../e2e/src/system/local-system';
import { SandboxdClientSet, normalizeBaseUrl, type SandboxdClient } from '@sandbox-scale/sandboxd-client';
import { API_VERSION, EXTENSIONS_API_VERSION, EXTENSIONS_GROUP, RESOURCES, SANDBOX_API_VERSION } from '@sandbox-scale/scale-core';
import { runBench } from './run-bench';

const N = Number(process.env.EXEC_N ?? 400);
const CONCURRENCY = 16;
const NS = 'bench-exec';
const POOL = 'exec';
const MiB = 1 << 20;
const FILE_SIZES = [1 * MiB, 64 * MiB];
/** Rounds of each file size: enough bytes that one slow round does not decide the figure. */
const ROUNDS: Record<number, number> = { [1 * MiB]: 20, [64 * MiB]: 3 };
/** What each timed exec runs: a real process that prints a known line, the cheapest useful command. */
const ARGV = ['echo', 'bench'];

interface Reply {
  status: number;
  body: Buffer;
}

/** Raw HTTPS to kube-apiserver with the admin kubeconfig's credentials, binary bodies both ways. */
async function apiClient(kc: KubeConfig, maxSockets: number) {
  const base: RequestOptions = {};
  await kc.applyToHTTPSOptions(base);
  const server = new URL(kc.getCurrentCluster()?.server ?? '');
  const agent = new Agent({ keepAlive: true, maxSockets });
  return (method: string, path: string, body?: Buffer, contentType = 'application/json'): Promise<Reply> =>
    new Promise((resolve, reject) => {
      const req = request(
        {
          ...base,
          agent,
          hostname: server.hostname,
          port: server.port,
          path,
          method,
          headers: { accept: '*/*', ...(body === undefined ? {} : { 'content-type': contentType, 'content-length': body.length }) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
}

function pct(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
}

/** `n` operations with `concurrency` workers: their sorted times and the wall time of all of them. */
async function timed(n: number, concurrency: number, op: () => Promise<void>): Promise<{ ms: number[]; wallMs: number }> {
  const ms: number[] = [];
  let next = 0;
  const t0 = performance.now();
  const worker = async (): Promise<void> => {
    while (next++ < n) {
      const t = performance.now();
      await op();
      ms.push(performance.now() - t);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { ms: ms.sort((a, b) => a - b), wallMs: performance.now() - t0 };
}

let wrong = 0;
function check(ok: boolean, what: string): void {
  if (ok) return;
  wrong++;
  if (wrong <= 5) console.error(`wrong result: ${what}`);
}

interface ExecFigures {
  p50: number;
  p99: number;
  perS: number;
}

/**
 * The sequential figures of several ways of doing one thing, measured in turns (one of each,
 * then again), so a drift of the machine during the run weighs on all of them alike; then each
 * one's throughput at CONCURRENCY.
 */
async function measureInTurns(ops: readonly (() => Promise<void>)[]): Promise<ExecFigures[]> {
  const seq: number[][] = ops.map(() => []);
  for (let i = 0; i < N + Math.min(50, N); i++) {
    for (const [k, op] of ops.entries()) {
      const t = performance.now();
      await op();
      // the first 50 turns warm up connections and the server's token cache
      if (i >= Math.min(50, N)) seq[k]?.push(performance.now() - t);
    }
  }
  const out: ExecFigures[] = [];
  for (const [k, op] of ops.entries()) {
    const par = await timed(N, CONCURRENCY, op);
    const ms = (seq[k] ?? []).sort((a, b) => a - b);
    out.push({ p50: pct(ms, 50), p99: pct(ms, 99), perS: (N / par.wallMs) * 1000 });
  }
  return out;
}

async function main(): Promise<void> {
  const sys = await startLocalSystem({
    nodes: 1,
    speed: 0,
    examples: false,
    beforeInstall: async (kc) => {
      await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NS } } });
    },
  });
  try {
    const kc = sys.kubeConfig;
    const custom = kc.makeApiClient(CustomObjectsApi);
    const ext = (plural: string, body: Record<string, unknown>) =>
      custom.createNamespacedCustomObject({ group: EXTENSIONS_GROUP, version: API_VERSION, namespace: NS, plural, body });
    await ext(RESOURCES.sandboxTemplate.plural, {
      apiVersion: EXTENSIONS_API_VERSION,
      kind: 'SandboxTemplate',
      metadata: { name: POOL },
      spec: { podTemplate: { spec: { containers: [{ name: 'main', image: 'registry.local/bench:1' }] } } },
    });
    await ext(RESOURCES.sandboxWarmPool.plural, {
      apiVersion: EXTENSIONS_API_VERSION,
      kind: 'SandboxWarmPool',
      metadata: { name: POOL },
      spec: { replicas: 1, sandboxTemplateRef: { name: POOL } },
    });
    await ext(RESOURCES.sandboxClaim.plural, {
      apiVersion: EXTENSIONS_API_VERSION,
      kind: 'SandboxClaim',
      metadata: { name: 'exec' },
      spec: { warmPoolRef: { name: POOL } },
    });
    type Bound = { status?: { sandbox?: { name?: string; claimID?: string } } };
    const bound = await eventually(
      async () => {
        const c = (await custom.getNamespacedCustomObject({
          group: EXTENSIONS_GROUP,
          version: API_VERSION,
          namespace: NS,
          plural: RESOURCES.sandboxClaim.plural,
          name: 'exec',
        })) as Bound;
        const sb = c.status?.sandbox;
        if (!sb?.name || !sb.claimID) throw new Error('claim not bound yet');
        return { name: sb.name, id: sb.claimID };
      },
      { timeoutMs: 120_000, intervalMs: 200 },
    );
    const api = await apiClient(kc, CONCURRENCY);
    const base = `/apis/${SANDBOX_API_VERSION}/namespaces/${NS}/sandboxes/${bound.name}`;
    await eventually(
      async () => {
        const r = await api('POST', `${base}/exec`, Buffer.from(JSON.stringify({ argv: ARGV })));
        if (r.status !== 200) throw new Error(`exec through the API: ${r.status} ${r.body.toString('utf8').slice(0, 300)}`);
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );

    // the node itself: its root token reads the sandbox's own token, which every direct call carries
    const node = sys.nodes[0];
    if (!node) throw new Error('no node');
    const tokenOf = new Map(sys.nodes.map((n) => [normalizeBaseUrl(n.url), n.token]));
    const direct: SandboxdClient = new SandboxdClientSet({ tokenFor: (url) => tokenOf.get(normalizeBaseUrl(url)) ?? '' }).forNode(node.url);
    const token = (await direct.sandbox(bound.id)).token;
    if (!token) throw new Error('the node gave no token for the sandbox');

    const execBody = Buffer.from(JSON.stringify({ argv: ARGV }));
    const [viaApi, getFloor, viaNode] = (await measureInTurns([
      async () => {
        const r = await api('POST', `${base}/exec`, execBody);
        const out = r.status === 200 ? (JSON.parse(r.body.toString('utf8')) as { exitCode?: number; stdout?: string }) : {};
        check(r.status === 200 && out.exitCode === 0 && out.stdout === 'bench\n', `API exec ${r.status}`);
      },
      // the floor of any request through the aggregator: a GET of the same sandbox, no node call
      async () => {
        const r = await api('GET', base);
        check(r.status === 200, `GET sandbox ${r.status}`);
      },
      async () => {
        const out = await direct.exec(bound.id, token, { argv: ARGV });
        check(out.exitCode === 0 && out.stdout === 'bench\n', 'direct exec');
      },
    ])) as [ExecFigures, ExecFigures, ExecFigures];

    const files: Record<string, { apiWrite: number; apiRead: number; agentWrite: number; agentRead: number }> = {};
    const agent = await direct.openAgent(bound.id, token);
    try {
      for (const size of FILE_SIZES) {
        const data = randomBytes(size);
        const rounds = ROUNDS[size] ?? 1;
        const mbps = (ms: number): number => ((size * rounds) / MiB / ms) * 1000;
        const path = `/bench-${size}.bin`;
        let t = performance.now();
        for (let i = 0; i < rounds; i++) {
          const r = await api('PUT', `${base}/files?path=${encodeURIComponent(path)}`, data, 'application/octet-stream');
          check(r.status === 201, `API write ${r.status} ${r.body.toString('utf8').slice(0, 200)}`);
        }
        const apiWrite = mbps(performance.now() - t);
        t = performance.now();
        for (let i = 0; i < rounds; i++) {
          const r = await api('GET', `${base}/files?path=${encodeURIComponent(path)}`);
          check(r.status === 200 && r.body.equals(data), `API read ${r.status}`);
        }
        const apiRead = mbps(performance.now() - t);
        t = performance.now();
        for (let i = 0; i < rounds; i++) await agent.writeFile(path, data);
        const agentWrite = mbps(performance.now() - t);
        t = performance.now();
        for (let i = 0; i < rounds; i++) {
          const chunks: Buffer[] = [];
          for await (const c of agent.readFile(path)) chunks.push(c);
          check(Buffer.concat(chunks).equals(data), 'agent read');
        }
        const agentRead = mbps(performance.now() - t);
        files[`${size / MiB}MiB`] = { apiWrite, apiRead, agentWrite, agentRead };
      }
    } finally {
      agent.close();
    }

    const r2 = (x: number): number => Math.round(x * 100) / 100;
    console.log('');
    console.log('| exec (echo)        | through the API | the node direct | ratio |');
    console.log('|--------------------|-----------------|-----------------|-------|');
    console.log(`| p50 ms             | ${r2(viaApi.p50)} | ${r2(viaNode.p50)} | ${r2(viaApi.p50 / viaNode.p50)} |`);
    console.log(`| p99 ms             | ${r2(viaApi.p99)} | ${r2(viaNode.p99)} | ${r2(viaApi.p99 / viaNode.p99)} |`);
    console.log(`| execs/s at c${CONCURRENCY}     | ${r2(viaApi.perS)} | ${r2(viaNode.perS)} | ${r2(viaApi.perS / viaNode.perS)} |`);
    console.log(
      `| a GET of the sandbox through the API (no node call): p50 ${r2(getFloor.p50)} ms, p99 ${r2(getFloor.p99)} ms, ${r2(getFloor.perS)}/s at c${CONCURRENCY} |`,
    );
    console.log('');
    console.log('| file  | API write MB/s | agent write MB/s | ratio | API read MB/s | agent read MB/s | ratio |');
    console.log('|-------|----------------|------------------|-------|---------------|-----------------|-------|');
    for (const [size, f] of Object.entries(files))
      console.log(
        `| ${size} | ${r2(f.apiWrite)} | ${r2(f.agentWrite)} | ${r2(f.apiWrite / f.agentWrite)} | ${r2(f.apiRead)} | ${r2(f.agentRead)} | ${r2(f.apiRead / f.agentRead)} |`,
      );
    console.log('');
    if (wrong > 0) process.exitCode = 1;
    console.log(
      JSON.stringify({
        bench: 'exec',
        n: N,
        concurrency: CONCURRENCY,
        api_exec_p50_ms: r2(viaApi.p50),
        api_exec_p99_ms: r2(viaApi.p99),
        direct_exec_p50_ms: r2(viaNode.p50),
        direct_exec_p99_ms: r2(viaNode.p99),
        exec_over_direct_p50: r2(viaApi.p50 / viaNode.p50),
        exec_over_direct_p99: r2(viaApi.p99 / viaNode.p99),
        api_get_p50_ms: r2(getFloor.p50),
        api_get_p99_ms: r2(getFloor.p99),
        exec_over_get_plus_direct_p50: r2(viaApi.p50 / (getFloor.p50 + viaNode.p50)),
        api_execs_per_s: r2(viaApi.perS),
        direct_execs_per_s: r2(viaNode.perS),
        files: Object.fromEntries(
          Object.entries(files).map(([size, f]) => [
            size,
            {
              api_write_mb_s: r2(f.apiWrite),
              api_read_mb_s: r2(f.apiRead),
              agent_write_mb_s: r2(f.agentWrite),
              agent_read_mb_s: r2(f.agentRead),
              write_ratio: r2(f.apiWrite / f.agentWrite),
              read_ratio: r2(f.apiRead / f.agentRead),
            },
          ]),
        ),
        wrong_results: wrong,
      }),
    );
  } finally {
    await sys.stop();
  }
}

runBench(main);
