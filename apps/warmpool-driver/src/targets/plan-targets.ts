import { comparePoolKeys, fnv1a32, poolKeyId, type PoolKey } from '@sandbox-scale/scale-core';

/** A node that can take warm targets (it publishes an address and is neither stale nor draining). */
export interface PlanNode {
  name: string;
  /** Relative capacity (integer > 0) where the node reports one; absent = 1. */
  weight?: number;
}

/** A pool whose replicas are spread over the nodes this tick. */
export interface SpreadPool {
  /** `<namespace>/<name>`: also seeds the remainder rotation. */
  id: string;
  key: PoolKey;
  replicas: number;
}

/** A pool whose per-node targets are kept as they were (template unreadable, or an old key retiring). */
export interface HeldPool {
  id: string;
  key: PoolKey;
  targets: ReadonlyMap<string, number>;
}

export interface NodePoolSpec {
  template: string;
  net: string;
  size: string;
  warm: number;
}

export interface TargetPlan {
  /** Pool id -> node -> warm target. */
  byPool: Map<string, Map<string, number>>;
  /** Node -> the FULL pool set to PUT: every distinct key, summed over pools, sorted; 0 where none targets it. */
  byNode: Map<string, NodePoolSpec[]>;
}

const weightOf = (n: PlanNode): number => (n.weight !== undefined && Number.isInteger(n.weight) && n.weight > 0 ? n.weight : 1);

/**
 * Spreads `total` over `nodes` (sorted by name) in proportion to their weights, exactly: the
 * floors first, then one more to the nodes with the largest remainders. Ties (all of them when
 * weights are equal, giving max - min <= 1) go in a rotated order starting at a stable hash of
 * `seed`, so the remainders of different pools land on different nodes (the reference always
 * gives them to the alphabetically first nodes). Integer arithmetic: the sum is exact.
 */
export function spreadReplicas(total: number, nodes: readonly PlanNode[], seed: string): Map<string, number> {
  const out = new Map<string, number>();
  const n = nodes.length;
  if (n === 0) return out;
  const want = Math.max(0, Math.floor(total));
  const weights = nodes.map(weightOf);
  const sumW = weights.reduce((a, b) => a + b, 0);
  const offset = fnv1a32(seed) % n;
  const rows = nodes.map((node, i) => {
    const w = weights[i] ?? 1;
    return { name: node.name, base: Math.floor((want * w) / sumW), frac: (want * w) % sumW, order: (i - offset + n) % n };
  });
  let rem = want - rows.reduce((a, r) => a + r.base, 0);
  const byRemainder = [...rows].sort((a, b) => b.frac - a.frac || a.order - b.order);
  for (const r of byRemainder) {
    out.set(r.name, r.base + (rem > 0 ? 1 : 0));
    rem--;
  }
  // Keep node order for readers (sorted by name).
  return new Map(rows.map((r) => [r.name, out.get(r.name) ?? 0]));
}

/**
 * Pools x nodes -> each pool's targets and each node's full pool set (pure). Two pools with the
 * same key become one spec (sandboxd rejects duplicate keys); every node gets every key, so a
 * key that no pool targets on that node is drained there, and a deleted pool's key is absent.
 */
export function planTargets(input: { pools: readonly SpreadPool[]; held: readonly HeldPool[]; nodes: readonly PlanNode[] }): TargetPlan {
  const nodes = [...input.nodes].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const byPool = new Map<string, Map<string, number>>();
  const keys = new Map<string, PoolKey>();
  const sums = new Map<string, Map<string, number>>();
  const add = (id: string, key: PoolKey, targets: ReadonlyMap<string, number>): void => {
    byPool.set(id, new Map(targets));
    const kid = poolKeyId(key);
    keys.set(kid, key);
    let perNode = sums.get(kid);
    if (!perNode) sums.set(kid, (perNode = new Map()));
    for (const [node, warm] of targets) perNode.set(node, (perNode.get(node) ?? 0) + warm);
  };
  for (const p of input.pools) add(p.id, p.key, spreadReplicas(p.replicas, nodes, p.id));
  for (const h of input.held) add(h.id, h.key, h.targets);
  const sortedKeys = [...keys.entries()].sort((a, b) => comparePoolKeys(a[1], b[1]));
  const byNode = new Map<string, NodePoolSpec[]>();
  for (const node of nodes) {
    byNode.set(
      node.name,
      sortedKeys.map(([kid, k]) => ({ template: k.template, net: k.net, size: k.size, warm: sums.get(kid)?.get(node.name) ?? 0 })),
    );
  }
  return { byPool, byNode };
}
