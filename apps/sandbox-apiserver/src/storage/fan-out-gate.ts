import { StatusError } from '@sandbox-scale/scale-core';

/** How many requests that ask every node may run at once on one replica. */
export interface FanOutCaps {
  /** All namespaces together. */
  readonly maxInFlight: number;
  /** One namespace, all its users together (a tenant's ServiceAccounts share it). */
  readonly maxPerNamespace: number;
}

export const DEFAULT_FAN_OUT_CAPS: FanOutCaps = { maxInFlight: 32, maxPerNamespace: 4 };

/**
 * Bounds the requests that cost one call per node (a sandbox's snapshots are on whichever nodes
 * took them, so listing, deleting and claiming one asks them all). At 400 nodes one such request
 * is 400 sandboxd calls, so the per-user request cap alone would let one tenant keep the nodes
 * busy for everyone: past a cap the request is answered 429 with Retry-After at once, before any
 * node is asked, rather than queued.
 */
export class FanOutGate {
  #total = 0;
  readonly #perNamespace = new Map<string, number>();

  constructor(readonly caps: FanOutCaps = DEFAULT_FAN_OUT_CAPS) {}

  /** Runs `fn` holding one slot of `namespace`, or throws TooManyRequests naming the cap. */
  async run<T>(namespace: string, fn: () => Promise<T>): Promise<T> {
    const mine = this.#perNamespace.get(namespace) ?? 0;
    if (mine >= this.caps.maxPerNamespace)
      throw busy(`too many requests that ask every node in flight in namespace "${namespace}" (${this.caps.maxPerNamespace})`);
    if (this.#total >= this.caps.maxInFlight) throw busy(`too many requests that ask every node in flight (${this.caps.maxInFlight})`);
    this.#total++;
    this.#perNamespace.set(namespace, mine + 1);
    try {
      return await fn();
    } finally {
      this.#total--;
      const left = (this.#perNamespace.get(namespace) ?? 1) - 1;
      if (left === 0) this.#perNamespace.delete(namespace);
      else this.#perNamespace.set(namespace, left);
    }
  }

  /** Slots held now (tests, metrics). */
  get inFlight(): number {
    return this.#total;
  }
}

// The other fan-out, the lookup of a name whose owner moved, needs no cap: every lookup that
// asks at once shares one listing of the nodes (peers/fresh-listing.ts).

function busy(message: string): StatusError {
  return new StatusError('TooManyRequests', `${message}; retry later`, { retryAfterSeconds: 1 });
}
