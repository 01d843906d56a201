import type { Logger } from '@sandbox-scale/kube-runtime';
import { inventoryName, OWNER_KINDS, parseOwnerRef } from '@sandbox-scale/scale-core';
import type { SandboxStorage } from '../storage/sandbox-storage';
import { FreshListing } from './fresh-listing';

/**
 * Asks every node for a live Sandbox-owned delivery named `namespace/name` (by the claim_ref
 * the node recorded), for the moments after the peer set changed when the replica that created
 * it may be gone and its node has not published it yet. A hit goes into this replica's
 * claim-time index, so the verb that asked is then served here. O(nodes) calls: only used on
 * a miss while owners are moving, and one listing serves every lookup that asks at once.
 */
export async function findOnNodes(storage: SandboxStorage, namespace: string, name: string, log: Logger): Promise<boolean> {
  if (!storage.router.configured) return false;
  const hit = (await listingOf(storage, log).fresh())
    .flatMap(({ node, rows }) => rows.map((row) => ({ node, row })))
    .find(({ row }) => {
      const o = parseOwnerRef(row.claimRef);
      return o !== undefined && o.kind === OWNER_KINDS.sandbox && o.namespace === namespace && o.name === name;
    });
  if (hit === undefined) return false;
  storage.index.put({ namespace, name, node: hit.node, claimId: hit.row.id });
  return true;
}

interface NodeRows {
  node: string;
  rows: readonly { id: string; claimRef?: string | undefined }[];
}

// One listing of every node per storage, shared by every lookup that asks at once: a burst of
// creates in the minute after the peers change costs O(nodes) calls, not O(creates × nodes).
const listings = new WeakMap<SandboxStorage, FreshListing<NodeRows[]>>();

function listingOf(storage: SandboxStorage, log: Logger): FreshListing<NodeRows[]> {
  let l = listings.get(storage);
  if (l === undefined) {
    l = new FreshListing(() => listEveryNode(storage, log));
    listings.set(storage, l);
  }
  return l;
}

async function listEveryNode(storage: SandboxStorage, log: Logger): Promise<NodeRows[]> {
  const nodes = storage.cache.inventories().filter((i) => i.address);
  return Promise.all(
    nodes.map(async (inv): Promise<NodeRows> => {
      try {
        return {
          node: inventoryName(inv),
          rows: await storage.router.clientAt(inv.address ?? '').sandboxes(undefined, { signal: AbortSignal.timeout(10_000) }),
        };
      } catch (err) {
        log.warn({ err, node: inventoryName(inv) }, 'could not list the node while looking for a sandbox by its claim reference');
        return { node: inventoryName(inv), rows: [] };
      }
    }),
  );
}
