import { CONDITION_STATUS, CONDITION_TYPES, inventoryName, type InventoryLike } from '@sandbox-scale/scale-core';

/** What the cold-claim node choice reads of a NodeInventory besides what warm routing reads. */
export interface ColdInventoryLike extends InventoryLike {
  readonly entries?: readonly unknown[] | undefined;
  readonly conditions?: readonly { readonly type: string; readonly status: string }[] | undefined;
}

export interface ColdCandidate {
  readonly node: string;
  readonly addr: string;
  /** Live sandboxes the node reported; the load figure the choice orders by. */
  readonly live: number;
}

const conditionTrue = (inv: ColdInventoryLike, type: string): boolean =>
  inv.conditions?.some((c) => c.type === type && c.status === CONDITION_STATUS.true) ?? false;

/**
 * Nodes a cold claim may go to, best first: a non-empty address and neither Stale (the report
 * may be wrong, and the node may not answer) nor Draining (sandboxd refuses with 429). Ordered
 * by fewest live entries — NodeInventory carries no capacity figure, so live claims are the only
 * load signal, and a cold boot is the heaviest thing a node does — then by name, so the order is
 * deterministic. Nodes `coolingDown` (their last claim call failed) go last, not away, so a fleet
 * whose every node just failed once can still be tried.
 */
export function coldCandidates(
  inventories: readonly ColdInventoryLike[],
  coolingDown: (node: string) => boolean = () => false,
): ColdCandidate[] {
  return inventories
    .filter(
      (inv) => (inv.address ?? '') !== '' && !conditionTrue(inv, CONDITION_TYPES.stale) && !conditionTrue(inv, CONDITION_TYPES.draining),
    )
    .map((inv) => ({
      node: inventoryName(inv),
      addr: inv.address ?? '',
      live: inv.entries?.length ?? 0,
      cooling: coolingDown(inventoryName(inv)),
    }))
    .sort((a, b) => Number(a.cooling) - Number(b.cooling) || a.live - b.live || (a.node < b.node ? -1 : a.node > b.node ? 1 : 0))
    .map(({ node, addr, live }) => ({ node, addr, live }));
}
