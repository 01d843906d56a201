import type { Logger } from '@sandbox-scale/kube-runtime';
import { synthesizeSandbox } from '@sandbox-scale/scale-core';
import type { SandboxStorage } from '../storage/sandbox-storage';
import type { PeerCall, PeerNotice } from './peer-protocol';
import type { PeerClient, PeerSet } from '@sandbox-scale/kube-runtime';

export interface OverlayShareOptions {
  readonly storage: SandboxStorage;
  readonly peers: PeerSet;
  readonly client: Pick<PeerClient<PeerCall>, 'call'>;
  readonly log: Logger;
  /** Longest a create or delete waits for the other replicas to take the notice. Default 1 s. */
  readonly waitMs?: number;
}

/**
 * Keeps lists and watches alike on every replica between a node's publishes (docs/adr/0003).
 * A replica that creates a sandbox (create, fork child, snapshot claim) lists it at once in its
 * created-overlay; it tells every other replica, which lists it the same way, before the verb
 * answers; a replica that releases one tells them to stop listing it. So a list or a watch
 * through any replica shows a sandbox once its create has answered, not a publish later.
 *
 * A notice is an optimisation over the nodes' NodeInventory, which stays the source of truth:
 * a replica that misses one (down, slow past `waitMs`, an older version) lists the sandbox
 * when its node next publishes, as it did without notices; nothing else depends on them.
 */
export class OverlayShare {
  readonly #waitMs: number;

  constructor(private readonly o: OverlayShareOptions) {
    this.#waitMs = o.waitMs ?? 1_000;
  }

  /** This replica just listed `namespace/name` in its created-overlay: the others list it too. */
  async created(namespace: string, name: string): Promise<void> {
    const row = this.o.storage.cache.get(namespace, name);
    if (row?.created === undefined) return;
    await this.#tell({ op: 'listed', namespace, name, node: row.node, entry: row.entry });
  }

  /** This replica just released the sandbox with this claim id: the others stop listing it. */
  async released(namespace: string, name: string, claimId: string): Promise<void> {
    if (claimId === '') return;
    await this.#tell({ op: 'released', namespace, name, claimId });
  }

  async #tell(notice: PeerNotice): Promise<void> {
    const others = this.o.peers.others();
    if (others.length === 0) return;
    await Promise.all(
      others.map(async (peer) => {
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<'late'>((resolve) => {
          timer = setTimeout(() => resolve('late'), this.#waitMs);
          timer.unref();
        });
        try {
          const told = this.o.client.call(peer, notice).then(() => 'told' as const);
          // a slow peer still gets the notice; the verb just does not wait for it any longer
          told.catch((err: unknown) =>
            this.o.log.warn(
              { err, peer, op: notice.op, namespace: notice.namespace, name: notice.name },
              'a replica did not take a list notice; it lists the change at the next publish',
            ),
          );
          if ((await Promise.race([told, late])) === 'late')
            this.o.log.warn(
              { peer, op: notice.op, namespace: notice.namespace, name: notice.name },
              'a replica is slow to take a list notice',
            );
        } catch {
          // logged above
        } finally {
          clearTimeout(timer);
        }
      }),
    );
  }
}

/**
 * Applies another replica's notice to this replica's view. A sandbox this replica lists already
 * (published, or created here) is left as it is: the newer source wins, and a late notice never
 * brings back what a publish or a release has since changed.
 */
export function applyNotice(storage: SandboxStorage, notice: PeerNotice): void {
  const { namespace, name } = notice;
  if (notice.op === 'released') {
    if (storage.index.getByName(namespace, name)?.claimId === notice.claimId) storage.index.deleteByName(namespace, name);
    storage.cache.markReleased(namespace, name, notice.claimId);
    return;
  }
  const { node, entry } = notice;
  if (entry.name !== `${namespace}/${name}` || !entry.id) return;
  if (storage.cache.get(namespace, name) !== undefined || storage.cache.isReleased(entry.id)) return;
  storage.index.put({ namespace, name, node, claimId: entry.id });
  storage.cache.addCreated(
    node,
    entry,
    synthesizeSandbox(node, entry, { resourceVersion: '0', ...(entry.claimedAt ? { fallbackCreationTimestamp: entry.claimedAt } : {}) }),
  );
}
