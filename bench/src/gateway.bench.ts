/**
 * L2 gateway overhead: 5,000 sequential claims through ClaimGateway (node choice, ledger,
 * claim, async record enqueue with a counting recorder) vs the same claims straight through
 * sandboxd-client, against one sandboxd-sim node, in one run, alternated ABBA. Prints a table, then ONE JSON
 * line (the last line). Figures only: nothing passes or fails on time.
 *
 * The baseline is the same client (one SandboxdClientSet, one keep-alive dispatcher) claiming at
 * the same node with the same body: template, net, size, TTL and a claim_ref of the fast path's
 * own form and length (formatOwnerRef of a FastPathClaim), so the node does the same work for both
 * and the difference is the gateway's. Work either path leaves behind (the gateway's queued
 * Bound record, the releases) is finished between timed calls, never inside the other's window.
 *
 *   npx nx run bench:gateway
 */
import { ClaimGateway, RecordQueue, type BoundRecorder } from '@sandbox-scale/claim-controller';
import { createLogger, deepFreeze } from '@sandbox-scale/kube-runtime';
import { SandboxdClientSet } from '@sandbox-scale/sandboxd-client';
import { startSim } from '@sandbox-scale/sandboxd-sim';
import { formatOwnerRef, OWNER_KINDS, poolKeyFor, OwnerRefKey } from '@sandbox-scale/scale-core';
import { randomUUID, randomBytes } from 'node:crypto';
import { runBench } from './run-bench';

/** The key every process of this run proves claim references with. */
const CLAIM_REF_KEY = new OwnerRefKey(randomBytes(32));

const TEMPLATE = 'base:24.04';
const TOKEN = 'bench-root-token';
const ITERS = Number(process.env.GATEWAY_ITERS ?? 5_000);
const WARMUP = Number(process.env.GATEWAY_WARMUP ?? 300);

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
}

async function main(): Promise<void> {
  const sim = await startSim({ nodes: 1, speed: 0, token: TOKEN, mesh: false, pools: [{ template: TEMPLATE, warm: 64 }] });
  const node = sim.nodes[0];
  if (!node) throw new Error('no node');
  const log = createLogger({ name: 'bench-gateway', level: 'error' });
  let recorded = 0;
  const recorder: BoundRecorder = {
    recordBound: async () => {
      recorded++;
    },
  };
  const records = new RecordQueue({ recorder, log, concurrency: 16 });
  const clients = new SandboxdClientSet({ token: TOKEN });
  // A static inventory that always advertises warm capacity: the figure is the gateway's cost, not
  // refill. Frozen, as the claim-controller's inventory cache hands its list out between changes.
  const inventory = deepFreeze([
    {
      metadata: { name: node.name, resourceVersion: '1' },
      node: node.name,
      address: node.addr,
      pools: [{ template: TEMPLATE, warm: 1_000_000 }],
    },
  ]);
  const gateway = new ClaimGateway({ refKey: CLAIM_REF_KEY, clients, fleetToken: TOKEN, inventories: () => inventory, records, log });
  const direct = clients.forNode(node.url);
  const key = poolKeyFor([{ image: TEMPLATE }], undefined);

  const gw: number[] = [];
  const dr: number[] = [];
  const viaGateway = async (i: number): Promise<{ ms: number; id: string }> => {
    const t0 = performance.now();
    const a = await gateway.deliverFastPath({ namespace: 'bench', name: `g-${i}`, warmPool: 'bench', key, ttlSeconds: 3600 });
    return { ms: performance.now() - t0, id: a.claimId };
  };
  const viaDirect = async (i: number): Promise<{ ms: number; id: string }> => {
    // the caller's reference, made before the clock starts: a direct caller already has its own
    const claimRef = formatOwnerRef({ kind: OWNER_KINDS.fastclaim, uid: randomUUID(), namespace: 'bench', name: `d-${i}` }, CLAIM_REF_KEY);
    const t0 = performance.now();
    const d = await direct.claim({ template: TEMPLATE, net: key.net, size: key.size, ttlSeconds: 3600, claimRef });
    return { ms: performance.now() - t0, id: d.id };
  };
  // the gateway's Bound record is written after its caller has the answer; let it finish
  // before the next timed call so it lands in neither path's window
  const settle = (): Promise<void> => records.drain();
  for (let i = 0; i < ITERS + WARMUP; i++) {
    // ABBA: the order flips every iteration, so neither path always runs right after the
    // other's garbage or the node's refill
    const first = i % 2 === 0 ? await viaGateway(i) : await viaDirect(i);
    await settle();
    const second = i % 2 === 0 ? await viaDirect(i) : await viaGateway(i);
    await settle();
    const [g, d] = i % 2 === 0 ? [first, second] : [second, first];
    if (i >= WARMUP) {
      gw.push(g.ms);
      dr.push(d.ms);
    }
    // keep the node's live set flat, outside the timed window
    await direct.release(g.id);
    await direct.release(d.id);
  }
  await records.drain();
  gw.sort((x, y) => x - y);
  dr.sort((x, y) => x - y);
  const g50 = percentile(gw, 50);
  const d50 = percentile(dr, 50);
  const out = {
    gateway_p50_ms: +g50.toFixed(4),
    gateway_p95_ms: +percentile(gw, 95).toFixed(4),
    direct_p50_ms: +d50.toFixed(4),
    direct_p95_ms: +percentile(dr, 95).toFixed(4),
    ratio_p50: +(g50 / d50).toFixed(3),
    ratio_p95: +(percentile(gw, 95) / percentile(dr, 95)).toFixed(3),
    overhead_p50_ms: +(g50 - d50).toFixed(4),
    claims: ITERS,
    records_written: recorded,
  };
  console.log('path      p50 ms   p95 ms   p99 ms');
  console.log(
    `gateway   ${g50.toFixed(3).padStart(6)}   ${percentile(gw, 95).toFixed(3).padStart(6)}   ${percentile(gw, 99).toFixed(3).padStart(6)}`,
  );
  console.log(
    `direct    ${d50.toFixed(3).padStart(6)}   ${percentile(dr, 95).toFixed(3).padStart(6)}   ${percentile(dr, 99).toFixed(3).padStart(6)}`,
  );
  await clients.close();
  await sim.stop();
  console.log(JSON.stringify(out));
}

runBench(main);
