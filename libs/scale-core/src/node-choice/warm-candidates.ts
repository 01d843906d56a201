import { DEFAULT_NET, DEFAULT_SIZE } from '../constants';
import { normalizePoolKey, type PoolKey, type PoolKeyLike } from '../pool-key/pool-key';
import type { PoolCapacity } from '../schemas/node-inventory';
import { randomIndex, type Rng } from './random';

/** The slice of a NodeInventory node choice reads. */
export interface InventoryLike {
  readonly metadata?: { readonly name?: string | undefined; readonly resourceVersion?: string | undefined } | undefined;
  readonly node: string;
  readonly address?: string | undefined;
  readonly pools?: readonly Pick<PoolCapacity, 'template' | 'net' | 'size' | 'warm'>[] | undefined;
}

/** A node that advertises warm capacity for the requested key. */
export interface WarmCandidate {
  /** The inventory's listed name (metadata.name), which routing resolves by. */
  readonly node: string;
  /** sandboxd address to claim at. */
  readonly addr: string;
  readonly warm: number;
}

/** The name a node is listed and routed by: metadata.name, or `node` when the object has none. */
export function inventoryName(inv: InventoryLike): string {
  return inv.metadata?.name || inv.node;
}

/**
 * Nodes that can serve `key` now: a non-empty address and a matching
 * pool with warm > 0. Pools that normalise to the same key on one node (net "" and "none")
 * are one candidate with their warm summed, so a node is tried at most once per claim.
 */
export function warmCandidates(inventories: readonly InventoryLike[], key: PoolKeyLike): WarmCandidate[] {
  const out: WarmCandidate[] = [];
  forEachWarmNode(inventories, normalizePoolKey(key), (node, addr, warm) => out.push({ node, addr, warm }));
  return out;
}

/**
 * The walk behind warmCandidates, for callers that adjust the counts before keeping a
 * candidate: `visit` gets each node that can serve `key` (already normalised) with its summed
 * warm count. Pools are matched field by field, without normalising a copy of each one.
 */
export function forEachWarmNode(
  inventories: readonly InventoryLike[],
  key: PoolKey,
  visit: (node: string, addr: string, warm: number) => void,
): void {
  for (const inv of inventories) {
    const addr = inv.address ?? '';
    if (addr === '' || inv.pools === undefined) continue;
    let warm = 0;
    for (const pool of inv.pools) {
      if (pool.warm > 0 && servesKey(pool, key)) warm += pool.warm;
    }
    if (warm > 0) visit(inventoryName(inv), addr, warm);
  }
}

/** poolKeyMatches(pool, key) for a key that is already normalised. */
function servesKey(pool: PoolKeyLike, key: PoolKey): boolean {
  if (pool.template !== key.template) return false;
  const net = pool.net === undefined || pool.net === '' ? DEFAULT_NET : pool.net;
  if (net !== key.net) return false;
  const size = pool.size === undefined || pool.size === '' ? DEFAULT_SIZE : pool.size;
  return size === key.size;
}

/**
 * Power of two choices: one candidate is taken as is; otherwise two
 * indices are drawn independently and uniformly WITH replacement, and the second wins only
 * if it is strictly warmer — ties go to the first draw. Sampling instead of taking the
 * maximum keeps a burst from piling onto whichever node looked warmest in a stale snapshot.
 * Returns the chosen index, or -1 when there are no candidates.
 */
export function pickPowerOfTwo(candidates: readonly Pick<WarmCandidate, 'warm'>[], rng: Rng): number {
  const n = candidates.length;
  if (n === 0) return -1;
  if (n === 1) return 0;
  const i = randomIndex(rng, n);
  const j = randomIndex(rng, n);
  const wi = candidates[i]?.warm ?? 0;
  const wj = candidates[j]?.warm ?? 0;
  return wj > wi ? j : i;
}
