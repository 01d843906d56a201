import { comparePoolKeys, normalizePoolKey, poolKeyId, type PoolKeyLike } from '@sandbox-scale/scale-core';
import type { NodePoolSpec } from './plan-targets';

/** One pool as the node reports it now (GET /v1/info or the PUT reply). */
export interface CurrentPool {
  key: PoolKeyLike;
  /** The node's effective target: the `warm` floor last PUT, as this driver never sends `warm_max`. */
  target: number;
}

/**
 * The set to PUT when the driver owns only some of a node's keys (a namespace-scoped driver, or
 * one that cannot attribute every key, see docs/adr/0002): its own specs, plus every key the
 * node holds now that the driver neither owns nor is draining, at the node's current target.
 *
 * PUT /v1/pools replaces the whole set, so a key left out is drained; carrying a foreign key
 * over at its current target leaves it as it was. Keys at target 0 are not carried: an omitted
 * pool and a pool at 0 mean the same to sandboxd. `target` stands in for `warm` because the
 * node reports no other figure; a key another writer set with `warm_max` or idle settings would
 * be rewritten to a static floor (documented limit).
 */
export function withCarriedOver(
  owned: readonly NodePoolSpec[],
  current: readonly CurrentPool[],
  draining: ReadonlySet<string>,
): NodePoolSpec[] {
  const taken = new Set(owned.map((s) => poolKeyId(s)));
  const out = [...owned];
  for (const p of current) {
    const id = poolKeyId(p.key);
    if (taken.has(id) || draining.has(id) || p.target <= 0) continue;
    taken.add(id);
    const k = normalizePoolKey(p.key);
    out.push({ template: k.template, net: k.net, size: k.size, warm: p.target });
  }
  return out.sort(comparePoolKeys);
}
