import { poolKeyId, type PoolCapacity } from '@sandbox-scale/scale-core';
import type { NodePoolSpec } from './plan-targets';

/** What the driver knows about one node when it decides whether to PUT its set again. */
export interface DriftInput {
  /** The FULL set the plan gives the node (and the driver last PUT successfully). */
  desired: readonly NodePoolSpec[];
  /** `pools` of the node's NodeInventory; undefined when the node publishes none. */
  reported: readonly PoolCapacity[] | undefined;
  /** metadata.resourceVersion of that NodeInventory. */
  reportRv: string;
  /**
   * The resourceVersion the driver's cache held for this node's NodeInventory when it last sent
   * the node a PUT; undefined when it never did (then any report counts as newer).
   */
  rvAtLastPut: string | undefined;
  /**
   * Key ids the driver answers for when it does not own the node's whole set (carry-over): its
   * own keys and the ones it drains. Other keys belong to another writer and are not compared.
   */
  compared?: ReadonlySet<string>;
}

/** Normalised key -> warm target; keys that normalise alike (net "" and "none") are summed. */
export function targetsByKey(pools: ReadonlyArray<{ template: string; net?: string; size?: string; target: number }>): Map<string, number> {
  const out = new Map<string, number>();
  for (const p of pools) out.set(poolKeyId(p), (out.get(poolKeyId(p)) ?? 0) + p.target);
  return out;
}

/**
 * Whether two target sets mean the same thing to sandboxd. A key missing on one side counts as
 * target 0: the plan sends 0 for a key no pool targets on the node, and a node may list or omit
 * such a pool, which is the same desired state either way.
 */
export function sameTargets(a: ReadonlyMap<string, number>, b: ReadonlyMap<string, number>): boolean {
  for (const [k, v] of a) if ((b.get(k) ?? 0) !== v) return false;
  for (const [k, v] of b) if ((a.get(k) ?? 0) !== v) return false;
  return true;
}

/**
 * The drift rule: PUT a node its unchanged set again when the node reports a different set AND
 * the report was published after the driver's last PUT to it.
 *
 * "After" is judged by resourceVersion, not by clocks: the report is newer iff its
 * resourceVersion differs from the one the driver's cache held when it sent the PUT. The
 * publisher writes only when the node's state changes, so after a PUT the old report (still
 * showing the pre-PUT set) keeps its resourceVersion and is never mistaken for drift: no
 * flapping while the inventory lags a publish interval. Inequality needs no ordering of the
 * opaque resourceVersion and no clock shared with the publisher.
 *
 * The one race left: a report the publisher read just before the PUT but wrote just after it
 * has a new resourceVersion and the old set, and costs one redundant PUT. That PUT is
 * idempotent (same set), and the next report shows the node's real state, so it never repeats.
 * The opposite choice (ignoring reports for a grace period after a PUT) could miss drift for
 * good, because an unchanged node is not published again.
 *
 * `target` is compared with the `warm` the driver sent: the driver never sends `warm_max`, so
 * the node's effective target equals that floor.
 */
export function needsRepush(input: DriftInput): boolean {
  if (input.rvAtLastPut !== undefined && input.reportRv === input.rvAtLastPut) return false;
  const desired = targetsByKey(input.desired.map((s) => ({ ...s, target: s.warm })));
  const { compared } = input;
  const reported = (input.reported ?? []).filter((p) => compared === undefined || compared.has(poolKeyId(p)));
  return !sameTargets(desired, targetsByKey(reported));
}
