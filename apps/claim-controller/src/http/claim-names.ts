import type { ClaimTarget } from '../gateway/assignment';

export interface ClaimNamesOptions {
  /** Whether the claims cache holds a SandboxClaim of the name. */
  cached: (target: ClaimTarget) => boolean;
  /** How long a name delivered here stays taken while its record is not in the cache yet. */
  holdMs: number;
  now?: () => number;
}

/**
 * Which claim names the fast path may still use, without a Kubernetes round trip: a name is
 * taken when the claims cache holds it, or when this process delivered under it and the cache
 * has not shown the record yet (the record is written asynchronously). `take` checks and
 * reserves in one step, so two concurrent requests for one name never both get a VM. Left to
 * the record itself: a claim another client creates under the same name within the cache's
 * lag; that record is refused (it never writes onto a foreign object) and the VM is held only
 * until its node lease runs out.
 */
export class ClaimNames {
  // insertion order is expiry order (one hold for all), so expired entries leave from the front
  readonly #taken = new Map<string, number>();
  constructor(private readonly o: ClaimNamesOptions) {}

  /** How long a name delivered here stays taken while its record is not in the cache yet. */
  get holdMs(): number {
    return this.o.holdMs;
  }

  get size(): number {
    return this.#taken.size;
  }

  /** Reserves the name; false when a claim of it exists or another delivery holds it. */
  take(t: ClaimTarget): boolean {
    const now = (this.o.now ?? Date.now)();
    this.#prune(now);
    const key = keyOf(t);
    if (this.#taken.has(key) || this.o.cached(t)) return false;
    this.#taken.set(key, now + this.o.holdMs);
    return true;
  }

  /** Frees the name: nothing was delivered under it, or the cache now holds its claim. */
  release(t: ClaimTarget): void {
    this.#taken.delete(keyOf(t));
  }

  #prune(now: number): void {
    for (const [key, until] of this.#taken) {
      if (until > now) return;
      this.#taken.delete(key);
    }
  }
}

function keyOf(t: ClaimTarget): string {
  return `${t.namespace}/${t.name}`;
}
