/**
 * Claim latency and throughput of sandboxd-client against sandboxd-sim over loopback, plus
 * the simulator's memory per sandbox. Prints a table, then ONE JSON line (the last line).
 * Figures only: nothing here passes or fails on time.
 *
 *   npx nx run bench:sim-claim    (tsx with NODE_OPTIONS=--expose-gc, for the memory figure)
 */
import { SandboxdClient, createSandboxdAgent } from '@sandbox-scale/sandboxd-client';
import { startSim, type Sim } from '@sandbox-scale/sandboxd-sim';
import { runBench } from './run-bench';

const TEMPLATE = 'base:24.04';
const TOKEN = 'bench-root-token';
const SEQUENTIAL = 10_000;
const CONCURRENT = 10_000;
const CONCURRENCY = 64;
const NO_KEEPALIVE = 2_000;
const WARMUP = 500;
const MEMORY_SANDBOXES = 200_000;
const MEMORY_NODES = 400;

interface Run {
  name: string;
  latenciesMs: number[];
  wallMs: number;
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number;
}

function summarize(run: Run) {
  const s = [...run.latenciesMs].sort((a, b) => a - b);
  return {
    name: run.name,
    n: s.length,
    p50: percentile(s, 50),
    p95: percentile(s, 95),
    p99: percentile(s, 99),
    max: s[s.length - 1] ?? NaN,
    perSecond: (s.length / run.wallMs) * 1000,
  };
}

async function timedClaims(name: string, client: SandboxdClient, total: number, concurrency: number): Promise<Run> {
  const latenciesMs: number[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < total) {
      next++;
      const t0 = performance.now();
      await client.claim({ template: TEMPLATE, ttlSeconds: 3600 });
      latenciesMs.push(performance.now() - t0);
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { name, latenciesMs, wallMs: performance.now() - start };
}

async function claimRuns(): Promise<Run[]> {
  // Speed 0 and a deep pool: every claim is a warm hit, so the figures are the API path itself.
  const sim = await startSim({ nodes: 1, speed: 0, token: TOKEN, refillConcurrency: 256, pools: [{ template: TEMPLATE, warm: 512 }] });
  const url = sim.nodes[0]?.url ?? '';
  const agent = createSandboxdAgent();
  const client = new SandboxdClient({ baseUrl: url, token: TOKEN, dispatcher: agent });
  const noKeepAlive = new SandboxdClient({ baseUrl: url, token: TOKEN, keepAlive: false });
  try {
    await timedClaims('warmup', client, WARMUP, 1);
    const runs = [
      await timedClaims(`sequential, keep-alive (${SEQUENTIAL})`, client, SEQUENTIAL, 1),
      await timedClaims(`concurrency ${CONCURRENCY}, keep-alive (${CONCURRENT})`, client, CONCURRENT, CONCURRENCY),
      await timedClaims(`sequential, no keep-alive (${NO_KEEPALIVE})`, noKeepAlive, NO_KEEPALIVE, 1),
    ];
    const metrics = await client.metrics();
    const warm = /sandboxd_claims_total\{tier="warm"\} (\d+)/.exec(metrics)?.[1];
    process.stdout.write(`warm hits: ${warm} of ${WARMUP + SEQUENTIAL + CONCURRENT + NO_KEEPALIVE} claims\n`);
    return runs;
  } finally {
    await client.close();
    await noKeepAlive.close();
    await agent.close();
    await sim.stop();
  }
}

function collect(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) return NaN;
  for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage().heapUsed;
}

/** Heap growth per live simulated sandbox, spread over many nodes as a scale test would. */
async function bytesPerSandbox(): Promise<number | null> {
  const sim: Sim = await startSim({ nodes: MEMORY_NODES, speed: 0, token: TOKEN, mesh: false });
  try {
    const nodes = sim.nodes.map((n) => sim.node(n.name));
    // one claim per node first, so per-node one-time allocations are not counted
    for (const n of nodes) await n.claimLocal({ template: TEMPLATE, ttl_seconds: 86_400 });
    const before = collect();
    if (Number.isNaN(before)) return null;
    for (let i = 0; i < MEMORY_SANDBOXES; i++) {
      const node = nodes[i % nodes.length];
      if (node) await node.claimLocal({ template: TEMPLATE, ttl_seconds: 86_400, claim_ref: `bench/claim-${i}` });
    }
    const after = collect();
    const live = nodes.reduce((s, n) => s + n.state.claimed, 0);
    process.stdout.write(
      `memory: ${live} live sandboxes over ${MEMORY_NODES} nodes, heap +${((after - before) / 2 ** 20).toFixed(1)} MiB\n`,
    );
    return (after - before) / MEMORY_SANDBOXES;
  } finally {
    await sim.stop();
  }
}

const fmt = (n: number, digits = 3): string => (Number.isFinite(n) ? n.toFixed(digits) : '-');
const round = (n: number, digits = 3): number => Number(n.toFixed(digits));

async function main(): Promise<void> {
  const runs = (await claimRuns()).map(summarize);
  const [seq, conc, noKa] = runs;
  if (!seq || !conc || !noKa) throw new Error('missing runs');
  const header = ['run', 'n', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms', 'claims/s'];
  const rows = runs.map((r) => [r.name, String(r.n), fmt(r.p50), fmt(r.p95), fmt(r.p99), fmt(r.max), fmt(r.perSecond, 0)]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
  process.stdout.write(`${line(header)}\n${rows.map(line).join('\n')}\n`);
  const bytes = await bytesPerSandbox();
  if (bytes === null) process.stdout.write('memory: run with NODE_OPTIONS=--expose-gc to measure bytes per sandbox\n');
  const ratio = noKa.p50 / seq.p50;
  process.stdout.write(
    `keep-alive: p50 without ÷ with = ${fmt(ratio, 2)}; sim bytes per sandbox = ${bytes === null ? '-' : fmt(bytes, 0)}\n`,
  );
  const result = {
    p50_ms: round(seq.p50),
    p95_ms: round(seq.p95),
    p99_ms: round(seq.p99),
    claims_per_s: Math.round(conc.perSecond),
    keepalive_ratio: round(ratio, 2),
    sim_bytes_per_sandbox: bytes === null ? null : Math.round(bytes),
    concurrent_p50_ms: round(conc.p50),
    concurrent_p99_ms: round(conc.p99),
    sequential_claims_per_s: Math.round(seq.perSecond),
    no_keepalive_p50_ms: round(noKa.p50),
    concurrency: CONCURRENCY,
    substrate: 'sandboxd-client -> sandboxd-sim (speed 0, warm hits) over loopback HTTP/1.1',
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

runBench(main);
