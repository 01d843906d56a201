import { StatusError } from '@sandbox-scale/scale-core';

export interface MemoryBudgetCaps {
  /** Bytes held for replies by every request of the server together. */
  readonly maxBytes: number;
  /**
   * Bytes held by the requests of one namespace, of every identity together: a tenant's
   * ServiceAccounts share it, so one namespace cannot take the whole server's share by minting
   * identities, and the rest stays for every other namespace.
   */
  readonly maxBytesPerNamespace: number;
}

/** A request's hold on the budget: grows as its reply is read, given back whole when it ends. */
export interface BudgetLease {
  /** Holds `bytes` more, or throws a 429 (Retry-After) naming the cap that is full. */
  take(bytes: number): void;
  /** Gives back what is held past `bytes` (what the request still holds once the rest is garbage). */
  keep(bytes: number): void;
  /** Gives back everything held; idempotent. */
  release(): void;
  readonly held: number;
}

function full(what: string, cap: number): StatusError {
  const mib = (cap / (1 << 20)).toFixed(0);
  return new StatusError('TooManyRequests', `too many bytes held for replies ${what} (${mib} MiB), please try again later`, {
    retryAfterSeconds: 1,
  });
}

/**
 * A bound on the memory that replies in flight hold, per server and per namespace. A request
 * takes bytes as it reads them (a reply that turns out small holds little) and gives all back
 * when its answer has been written or the caller went away; past a cap it is refused with 429
 * instead of the process running out of memory, which would take every tenant's requests (and,
 * behind an APIService, the cluster's discovery) with it.
 */
export class MemoryBudget {
  #held = 0;
  readonly #heldIn = new Map<string, number>();

  constructor(readonly caps: MemoryBudgetCaps) {}

  lease(namespace: string): BudgetLease {
    let held = 0;
    const take = (bytes: number): void => {
      if (bytes <= 0) return;
      if (this.#held + bytes > this.caps.maxBytes) throw full('by this server', this.caps.maxBytes);
      const inNamespace = this.#heldIn.get(namespace) ?? 0;
      if (inNamespace + bytes > this.caps.maxBytesPerNamespace) throw full(`in namespace "${namespace}"`, this.caps.maxBytesPerNamespace);
      this.#held += bytes;
      this.#heldIn.set(namespace, inNamespace + bytes);
      held += bytes;
    };
    const giveBack = (bytes: number): void => {
      if (bytes <= 0) return;
      this.#held -= bytes;
      const left = (this.#heldIn.get(namespace) ?? bytes) - bytes;
      if (left <= 0) this.#heldIn.delete(namespace);
      else this.#heldIn.set(namespace, left);
      held -= bytes;
    };
    return {
      take,
      keep: (bytes: number) => giveBack(held - Math.max(bytes, 0)),
      release: () => giveBack(held),
      get held() {
        return held;
      },
    };
  }

  /** Bytes held by every lease. */
  get held(): number {
    return this.#held;
  }

  /** Namespaces holding bytes (entries go with their last byte, so the map stays bounded by live requests). */
  get namespaces(): number {
    return this.#heldIn.size;
  }
}
