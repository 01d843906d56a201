import type { Logger } from '@sandbox-scale/kube-runtime';
import { inventoryName, OWNER_KINDS, parseOwnerRef } from '@sandbox-scale/scale-core';
import type { SandboxStorage } from '../storage/sandbox-storage';

/**
 * Asks every node for a live Sandbox-owned delivery named `namespace/name` (by the claim_ref
 * the node recorded), for the moments after the peer set changed when the replica that created
 * it may be gone and its node has not published it yet. A hit goes into this replica's
 * claim-time index, so the verb that asked is then served here. O(nodes) calls: only used on
 * a miss while owners are moving.
 */
export async function findOnNodes(storage: SandboxStorage, namespace: string, name: string, log: Logger): Promise<boolean> {
  if (!storage.router.configured) return false;
  return storage.fanOut.run(namespace, () => lookOnNodes(storage, namespace, name, log));
}

async function lookOnNodes(storage: SandboxStorage, namespace: string, name: string, log: Logger): Promise<boolean> {
  const nodes = storage.cache.inventories().filter((i) => i.address);
  const hits = await Promise.all(
    nodes.map(async (inv) => {
      try {
        const rows = await storage.router.clientAt(inv.address ?? '').sandboxes(undefined, { signal: AbortSignal.timeout(10_000) });
        const row = rows.find((r) => {
          const o = parseOwnerRef(r.claimRef);
          return o !== undefined && o.kind === OWNER_KINDS.sandbox && o.namespace === namespace && o.name === name;
        });
        return row === undefined ? undefined : { node: inventoryName(inv), claimId: row.id };
      } catch (err) {
        log.warn({ err, node: inventoryName(inv) }, 'could not list the node while looking for a sandbox by its claim reference');
        return undefined;
      }
    }),
  );
  const hit = hits.find((h) => h !== undefined);
  if (hit === undefined) return false;
  storage.index.put({ namespace, name, node: hit.node, claimId: hit.claimId });
  return true;
}
