import { CONDITION_STATUS, CONDITION_TYPES, poolKeyId, type NodeInventory } from '@sandbox-scale/scale-core';
import type { NodeInfo } from '@sandbox-scale/sandboxd-client';

export interface RoutableNode {
  name: string;
  address: string;
}

const isTrue = (inv: NodeInventory, type: string): boolean =>
  inv.conditions?.some((c) => c.type === type && c.status === CONDITION_STATUS.true) ?? false;

/**
 * Nodes that may take targets: an address, and neither Stale nor Draining. Sorted by name.
 * No weight is set: neither NodeInventory nor sandboxd's GET /v1/info carries a capacity figure
 * (only the at_capacity flag), so the spread stays even until one is published.
 */
export function routableNodes(inventories: readonly NodeInventory[]): RoutableNode[] {
  return inventories
    .filter((inv) => (inv.address ?? '') !== '' && !isTrue(inv, CONDITION_TYPES.stale) && !isTrue(inv, CONDITION_TYPES.draining))
    .map((inv) => ({ name: inv.node, address: inv.address ?? '' }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * Warm counts per node and normalised key. A PUT reply is fresher than the inventory (which
 * lags a publish interval), so it wins until that node publishes again; a node that did not
 * answer keeps its inventory counts, so one failure never collapses a pool's total to 0.
 */
export class WarmCounts {
  private readonly fromPut = new Map<string, { rv: string; warm: Map<string, number> }>();

  recordPut(node: string, inventoryRv: string, info: NodeInfo): void {
    this.fromPut.set(node, { rv: inventoryRv, warm: new Map(info.pools.map((p) => [poolKeyId(p.key), p.warm])) });
  }

  warmOf(keyId: string, nodes: readonly RoutableNode[], inventoryOf: (node: string) => NodeInventory | undefined): number {
    let total = 0;
    for (const n of nodes) {
      const inv = inventoryOf(n.name);
      const put = this.fromPut.get(n.name);
      if (put && put.rv === (inv?.metadata.resourceVersion ?? '')) {
        total += put.warm.get(keyId) ?? 0;
      } else {
        this.fromPut.delete(n.name);
        total += inv?.pools?.filter((p) => poolKeyId(p) === keyId).reduce((a, p) => a + p.warm, 0) ?? 0;
      }
    }
    return total;
  }
}
