import type { PeerSet } from '@sandbox-scale/kube-runtime';

export interface RenewalScopeOptions {
  readonly peers: PeerSet;
  /** False while peers cannot be called (no peer client): this replica then acts alone. */
  readonly peered: boolean;
  /** Whether the peer list has been read once. */
  readonly peersKnown: () => boolean;
  /** After the peers change, how long owners may still be moving (the routing's settle period). */
  readonly settleMs: number;
}

/**
 * Which sandboxes this replica keeps alive: those whose `namespace/name` it owns (the owner the
 * routing computes), so two replicas do not each renew every lease. Whenever the owner is not
 * certain (acting alone, the peers not read yet, or changed within the settle period) it renews
 * every one: a renewal twice is idempotent and only costs node work, a renewal nobody makes
 * ends a sandbox that was meant to live.
 */
export function renewalScope(o: RenewalScopeOptions): (namespace: string, name: string) => boolean {
  return (namespace, name) => {
    if (!o.peered || o.peers.self === '' || !o.peersKnown() || o.peers.changedWithin(o.settleMs)) return true;
    return o.peers.owns(namespace, name);
  };
}
