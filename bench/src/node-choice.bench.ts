/**
 * The cost of choosing a node for one claim (CapacityLedger.choose: the ledger's sync against the
 * listed inventories, the warm candidates of the key, power of two choices, the local count), by
 * fleet size, against the same choice over one node measured in the same run. Every node lists two
 * pools, one of them the key's, with warm capacity that does not run out during the run; the list
 * is the same array on every claim, as the claim-controller's inventory cache hands it out between
 * changes. Prints a table, then ONE JSON line (the last line). Figures only: nothing passes or
 * fails on time.
 *
 *   npx nx run bench:node-choice
 */
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
function usPerChoice(n: number): number {
  const ledger = new CapacityLedger();
  const list = fleet(n);
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
  const rows = FLEETS.map((n) => ({ n, us: usPerChoice(n) }));
  const base = rows[0]?.us ?? NaN;
  console.log('nodes    us per choice   ratio to 1 node   ns per node');
  for (const r of rows)
    console.log(
      `${String(r.n).padStart(5)}  ${r.us.toFixed(2).padStart(14)}  ${(r.us / base).toFixed(1).padStart(16)}  ${((r.us * 1000) / r.n).toFixed(0).padStart(12)}`,
    );
  console.log(
    JSON.stringify(
      Object.fromEntries(
        rows.flatMap((r) => [
          [`us_per_choice_${r.n}`, +r.us.toFixed(3)],
          [`ratio_${r.n}`, +(r.us / base).toFixed(1)],
        ]),
      ),
    ),
  );
}

runBench(main);
