/**
 * e2b's JS SDK (npm `e2b`, unmodified) against the same work done through the Kubernetes API, in
 * one run on one local system (kube-apiserver, its aggregator, sandbox-apiserver with its e2b
 * listener, claim-controller and a simulated node), as one tenant ServiceAccount holding the edit
 * role:
 * - e2b: `Sandbox.create(pool)` until it answers, then `commands.run('echo e2b')` until its output;
 * - the API: `SandboxClient.claim({ pool })` (a SandboxClaim waited on until Ready), then the
 *   `exec` subresource running `echo e2b` until its output.
 * Each is timed from the call to the output, one at a time (p50/p99, in turns so a drift of the
 * machine weighs on both) and 20 at once; create alone is printed too. Every output is checked: a
 * wrong one sets the exit code. Each sandbox is released after its round, untimed. Prints a table,
 * then ONE JSON line (the last line). Figures only: nothing passes or fails on time.
 *
 *   npx nx run bench:e2b            (E2B_N=10 for a shorter run)
 */
import { CoreV1Api } from '@kubernetes/client-node';
import { SandboxClient } from '@sandbox-scale/sdk';
import { startLocalSystem } from '../../e2e/src/system/local-system';
import { localTarget } from '../../e2e/src/system/local-target';
import { applyWarmPool, waitPoolReady } from '../../e2e/src/system/suite-system';
import { grantEditRole } from '../../e2e/src/testing/tenant-role';
import { runBench } from './run-bench';

const N = Number(process.env.E2B_N ?? 40);
const CONCURRENCY = 20;
const NS = 'bench-e2b';
const POOL = 'agent';

function pct(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
}

let wrong = 0;
function check(ok: boolean, what: string): void {
  if (ok) return;
  wrong++;
  if (wrong <= 5) console.error(`wrong result: ${what}`);
}

/** One claimed-and-used sandbox: the time to its create's answer, the time to its command's output, and how to give it back. */
interface Round {
  createMs: number;
  totalMs: number;
  release: () => Promise<unknown>;
}

async function main(): Promise<void> {
  const sys = await startLocalSystem({
    nodes: 1,
    speed: 0,
    // the node says how many are warm every second: claim-controller counts its own claims between
    // publishes, so a slower publish would make a sequential run wait on a count, not on a VM
    publishInterval: '1s',
    examples: false,
    beforeInstall: async (kc) => {
      await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NS } } });
    },
  });
  const target = localTarget(sys);
  try {
    const tenant = await target.tenant(NS, 'bench');
    await grantEditRole(sys.kubeConfig, NS, 'bench');
    await applyWarmPool(target, NS, { name: POOL, image: 'registry.local/bench:1', replicas: CONCURRENCY + 4 });
    await waitPoolReady(target, NS, CONCURRENCY, { atLeast: true, timeoutMs: 180_000 });

    // e2b's SDK reads where to go from its environment, as an agent builder sets it
    process.env.E2B_API_URL = sys.e2bUrls[0] ?? '';
    process.env.E2B_SANDBOX_URL = sys.e2bUrls[0] ?? '';
    process.env.E2B_API_KEY = tenant.token;
    const { Sandbox } = await import('e2b');
    const viaE2b = async (): Promise<Round> => {
      const t0 = performance.now();
      const sbx = await Sandbox.create(POOL);
      const createMs = performance.now() - t0;
      const r = await sbx.commands.run('echo e2b');
      const totalMs = performance.now() - t0;
      check(r.stdout === 'e2b\n' && r.exitCode === 0, `e2b run: ${JSON.stringify(r.stdout)}`);
      return { createMs, totalMs, release: () => sbx.kill() };
    };
    const client = new SandboxClient({ kubeConfig: tenant.kubeConfig, namespace: NS });
    const viaApi = async (): Promise<Round> => {
      const t0 = performance.now();
      const sb = await client.claim({ pool: POOL, withToken: false });
      const createMs = performance.now() - t0;
      const r = await sb.exec(['sh', '-c', 'echo e2b']);
      const totalMs = performance.now() - t0;
      check(r.stdout === 'e2b\n' && r.exitCode === 0, `API exec: ${JSON.stringify(r.stdout)}`);
      return { createMs, totalMs, release: () => sb.release() };
    };

    const ways = [viaE2b, viaApi];
    const seq = ways.map(() => ({ create: [] as number[], total: [] as number[] }));
    const warm = Math.min(5, N);
    for (let i = 0; i < N + warm; i++) {
      for (const [k, way] of ways.entries()) {
        const r = await way();
        await r.release();
        if (i < warm) continue;
        seq[k]?.create.push(r.createMs);
        seq[k]?.total.push(r.totalMs);
      }
    }
    const par = ways.map(() => ({ total: [] as number[], wallMs: 0 }));
    for (const [k, way] of ways.entries()) {
      await waitPoolReady(target, NS, CONCURRENCY, { atLeast: true, timeoutMs: 180_000 });
      const t0 = performance.now();
      const rounds = await Promise.all(Array.from({ length: CONCURRENCY }, () => way()));
      const p = par[k];
      if (p) {
        p.wallMs = performance.now() - t0;
        p.total = rounds.map((r) => r.totalMs);
      }
      await Promise.all(rounds.map((r) => r.release()));
    }

    const fig = (k: number) => {
      const create = [...(seq[k]?.create ?? [])].sort((a, b) => a - b);
      const total = [...(seq[k]?.total ?? [])].sort((a, b) => a - b);
      const c20 = [...(par[k]?.total ?? [])].sort((a, b) => a - b);
      return {
        createP50: pct(create, 50),
        createP99: pct(create, 99),
        p50: pct(total, 50),
        p99: pct(total, 99),
        c20P50: pct(c20, 50),
        c20P99: pct(c20, 99),
        c20WallMs: par[k]?.wallMs ?? NaN,
      };
    };
    const e2b = fig(0);
    const api = fig(1);
    const r2 = (x: number): number => Math.round(x * 100) / 100;
    console.log('');
    console.log(`| create → first output (echo), ms | e2b's SDK | the Kubernetes API | ratio |`);
    console.log('|----------------------------------|-----------|--------------------|-------|');
    const row = (label: string, a: number, b: number): void => console.log(`| ${label} | ${r2(a)} | ${r2(b)} | ${r2(a / b)} |`);
    row('create p50', e2b.createP50, api.createP50);
    row('create p99', e2b.createP99, api.createP99);
    row('create → output p50', e2b.p50, api.p50);
    row('create → output p99', e2b.p99, api.p99);
    row(`${CONCURRENCY} at once: p50`, e2b.c20P50, api.c20P50);
    row(`${CONCURRENCY} at once: p99`, e2b.c20P99, api.c20P99);
    row(`${CONCURRENCY} at once: all done`, e2b.c20WallMs, api.c20WallMs);
    console.log('');
    console.log(`${N} sequential rounds of each (after ${warm} to warm up), then ${CONCURRENCY} at once; wrong results: ${wrong}`);
    if (wrong > 0) process.exitCode = 1;
    console.log(
      JSON.stringify({
        bench: 'e2b',
        n: N,
        concurrency: CONCURRENCY,
        e2b: Object.fromEntries(Object.entries(e2b).map(([k, v]) => [k, r2(v)])),
        api: Object.fromEntries(Object.entries(api).map(([k, v]) => [k, r2(v)])),
        ratioP50: r2(e2b.p50 / api.p50),
        ratioC20P50: r2(e2b.c20P50 / api.c20P50),
        wrong,
      }),
    );
  } finally {
    await target.stop();
  }
}

runBench(main);
