/**
 * The cost of choosing a node for one claim (CapacityLedger.choose: power of two choices over the
 * nodes with warm capacity of the key, the local count taken), by fleet size. Two ways, in the same
 * run: over the frozen list an informer cache hands out between changes (the same array on every
 * claim, which the ledger chooses from again without walking it), and over a plain array, which
 * it walks on every claim (the baseline: how every choice was made before). Every node lists two
 * pools, one of them the key's, with warm capacity that does not run out during the run. Prints a
 * table, then ONE JSON line (the last line). Figures only: nothing passes or fails on time.
 *
 *   npx nx run bench:node-choice
 */
import { deepFreeze } from '@sandbox-scale/kube-runtime';
import { CapacityLedger, poolKeyFor, type InventoryLike } from '@sandbox-scale/scale-core';
import { runBench } from './run-bench';

const FLEETS = [1, 100, 1_000, 5_000];
const TEMPLATE = 'base:24.04';

function fleet(n: number): InventoryLike[] {
  return Array.from({ length: n }, (_, i) => ({
    metadata: { name: `node-${i}`, resourceVersion: String(1_000 + i) },
    node: `node-${i}`,
    address: `10.0.${i >> 8}.${i & 255}:7777`,
    pools: [
      { template: TEMPLATE, warm: 1_000_000_000 },
      { template: 'other:1', warm: 8 },
    ],
  }));
}

/** Microseconds per choice over `n` nodes: a warm-up, then the median of five timed rounds. */
function usPerChoice(n: number, frozen: boolean): number {
  const ledger = new CapacityLedger();
  // frozen all the way down, as an informer's store hands out its objects and lists
  const list = frozen ? deepFreeze(fleet(n)) : fleet(n);
  const key = poolKeyFor([{ image: TEMPLATE }], undefined);
  // about a fifth of a second per round whatever the fleet
  const iters = Math.max(200, Math.round(200_000 / n));
  const round = (): number => {
    const t0 = performance.now();
    for (let i = 0; i < iters; i++) if (ledger.choose(list, key, Math.random) === undefined) throw new Error(`no node of ${n} chosen`);
    return ((performance.now() - t0) * 1000) / iters;
  };
  round();
  const rounds = Array.from({ length: 5 }, round).sort((a, b) => a - b);
  return rounds[2] ?? NaN;
}

function main(): void {
  const rows = FLEETS.map((n) => ({ n, walked: usPerChoice(n, false), cached: usPerChoice(n, true) }));
  console.log('nodes   us per choice, frozen list   us per choice, walked (baseline)   walked / frozen');
  for (const r of rows)
    console.log(
      `${String(r.n).padStart(5)}  ${r.cached.toFixed(2).padStart(27)}  ${r.walked.toFixed(2).padStart(33)}  ${(r.walked / r.cached).toFixed(1).padStart(16)}`,
    );
  console.log(
    JSON.stringify(
      Object.fromEntries(
        rows.flatMap((r) => [
          [`us_per_choice_${r.n}`, +r.cached.toFixed(3)],
          [`us_per_choice_walked_${r.n}`, +r.walked.toFixed(3)],
          [`ratio_${r.n}`, +(r.walked / r.cached).toFixed(1)],
        ]),
      ),
    ),
  );
}

runBench(main);
