/**
 * bench:transport — the same API calls through the per-request path client-node gives (a new
 * https.Agent per call, so a TCP connect and TLS handshake per call) and through kube-runtime's
 * kept-alive transport, in one run, against a control plane this bench starts. Two identities:
 * the admin client certificate and a ServiceAccount token, as the apps run. Sequential calls,
 * then CONCURRENCY at a time. Prints a table, then ONE JSON line (the last line). Figures only.
 *
 *   npx nx run bench:transport        (BENCH_TRANSPORT_CALLS=500 by default)
 */
import { HttpMethod, IsomorphicFetchHttpLibrary, type KubeConfig, RequestContext } from '@kubernetes/client-node';
import {
  closeKubeTransport,
  type ConnectionCounters as Counters,
  countConnections,
  kubeRequest,
  kubeTransportStats,
} from '@sandbox-scale/kube-runtime';
import { createTestNamespace, kubeconfigForServiceAccount, startControlPlane } from '@sandbox-scale/e2e';
import { runBench } from './run-bench';

const CALLS = Number(process.env.BENCH_TRANSPORT_CALLS ?? 500);
const CONCURRENCY = Number(process.env.BENCH_TRANSPORT_CONCURRENCY ?? 16);
const WARMUP = 20;
const PATH = '/apis/authentication.k8s.io/v1/selfsubjectreviews';
const BODY = { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' };

interface Run {
  readonly p50: number;
  readonly p99: number;
  readonly requests: number;
  readonly handshakes: number;
}

const percentile = (sorted: readonly number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;

const http = new IsomorphicFetchHttpLibrary();

/** The call as kube-runtime made it before: client-node authenticates and builds a new agent for it. */
async function perRequestCall(kc: KubeConfig, counters: Counters): Promise<void> {
  const server = kc.getCurrentCluster()?.server ?? '';
  const ctx = new RequestContext(`${server}${PATH}`, HttpMethod.POST);
  ctx.setHeaderParam('Accept', 'application/json');
  ctx.setHeaderParam('Content-Type', 'application/json');
  ctx.setBody(JSON.stringify(BODY));
  await kc.applySecurityAuthentication(ctx);
  counters.requests++;
  countConnections(ctx.getAgent() as Parameters<typeof countConnections>[0], counters);
  const res = await http.send(ctx).toPromise();
  await res.body.text();
  if (res.httpStatusCode !== 201) throw new Error(`per-request call answered ${res.httpStatusCode}`);
}

async function keptAliveCall(kc: KubeConfig): Promise<void> {
  await kubeRequest(kc, { method: 'POST', path: PATH, body: BODY });
}

/** `n` calls, `concurrency` at a time; latency of each. */
async function drive(n: number, concurrency: number, call: () => Promise<void>): Promise<number[]> {
  const lat: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        next++;
        const t0 = performance.now();
        await call();
        lat.push(performance.now() - t0);
      }
    }),
  );
  return lat.sort((a, b) => a - b);
}

/** Both paths from cold, warm-up included: the kept-alive path's first connection is part of its figure. */
async function measure(kc: KubeConfig, concurrency: number): Promise<{ old: Run; kept: Run }> {
  const oldCounters: Counters = { requests: 0, connections: 0, handshakes: 0, resumed: 0 };
  await drive(WARMUP, 1, () => perRequestCall(kc, oldCounters));
  const oldLat = await drive(CALLS, concurrency, () => perRequestCall(kc, oldCounters));
  closeKubeTransport(kc);
  const before = kubeTransportStats(kc).api;
  await drive(WARMUP, 1, () => keptAliveCall(kc));
  const keptLat = await drive(CALLS, concurrency, () => keptAliveCall(kc));
  const after = kubeTransportStats(kc).api;
  return {
    old: { p50: percentile(oldLat, 50), p99: percentile(oldLat, 99), requests: oldCounters.requests, handshakes: oldCounters.handshakes },
    kept: {
      p50: percentile(keptLat, 50),
      p99: percentile(keptLat, 99),
      requests: after.requests - before.requests,
      handshakes: after.handshakes - before.handshakes,
    },
  };
}

const perHandshake = (r: Run): number => r.requests / Math.max(1, r.handshakes);

async function main(): Promise<void> {
  const cp = await startControlPlane({ controllerManager: false });
  try {
    const ns = await createTestNamespace(cp.kubeConfig, 'bench-transport');
    const identities: Array<[string, KubeConfig]> = [
      ['client cert', cp.kubeConfig],
      ['SA token', await kubeconfigForServiceAccount(cp.kubeConfig, ns, 'bench')],
    ];
    const rows: Array<{ who: string; c: number; old: Run; kept: Run }> = [];
    for (const [who, kc] of identities) {
      for (const c of [1, CONCURRENCY]) rows.push({ who, c, ...(await measure(kc, c)) });
      closeKubeTransport(kc);
    }
    console.log(
      `${CALLS} SelfSubjectReview calls per row after ${WARMUP} of warm-up (latency of the ${CALLS}; requests and handshakes include the warm-up)`,
    );
    console.log('identity     conc  path        p50 ms   p99 ms   requests  handshakes  req/handshake');
    for (const r of rows) {
      for (const [name, run] of [
        ['per-request', r.old],
        ['kept-alive', r.kept],
      ] as const) {
        console.log(
          `${r.who.padEnd(12)} ${String(r.c).padStart(4)}  ${name.padEnd(11)} ${run.p50.toFixed(2).padStart(7)}  ${run.p99.toFixed(2).padStart(7)}  ${String(run.requests).padStart(8)}  ${String(run.handshakes).padStart(10)}  ${perHandshake(run).toFixed(1).padStart(13)}`,
        );
      }
    }
    const seq = rows.filter((r) => r.c === 1);
    const round = (x: number): number => Number(x.toFixed(3));
    const out: Record<string, number> = { calls: CALLS, concurrency: CONCURRENCY };
    for (const r of rows) {
      const key = `${r.who === 'client cert' ? 'cert' : 'token'}_c${r.c}`;
      out[`${key}_old_p50_ms`] = round(r.old.p50);
      out[`${key}_new_p50_ms`] = round(r.kept.p50);
      out[`${key}_old_req_per_handshake`] = round(perHandshake(r.old));
      out[`${key}_new_req_per_handshake`] = round(perHandshake(r.kept));
    }
    out.speedup_p50 = round(Math.min(...seq.map((r) => r.old.p50 / r.kept.p50)));
    console.log(JSON.stringify(out));
  } finally {
    await cp.stop();
  }
}

runBench(main);
