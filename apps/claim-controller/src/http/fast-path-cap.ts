import { StatusError } from '@sandbox-scale/scale-core';
import type { ClaimTarget } from '../gateway/assignment';

export interface FastPathCapOptions {
  /** Live fast-path claims allowed per namespace; 0 means no cap. */
  maxPerNamespace: number;
  /** Names of the fast-path claims of `namespace` the cache holds (not being deleted). */
  recorded: (namespace: string) => readonly string[];
  /** How long a delivery whose record is not in the cache yet still counts. */
  holdMs: number;
  now?: () => number;
}

/**
 * The operator's cap on live fast-path claims per namespace. The fast path claims a VM before
 * any object exists, so quota and admission never see the request; this is checked first, and
 * counts both the claims recorded (the cache) and the deliveries whose record is still on its
 * way, so a burst cannot pass the cap between two cache updates.
 */
export class FastPathCap {
  readonly #inFlight = new Map<string, Map<string, number>>();
  constructor(private readonly o: FastPathCapOptions) {}

  /** Counts `t` against its namespace, or throws 429 naming the cap. */
  admit(t: ClaimTarget): void {
    if (this.o.maxPerNamespace <= 0) return;
    const now = (this.o.now ?? Date.now)();
    const pending = this.#inFlight.get(t.namespace) ?? new Map<string, number>();
    for (const [name, until] of pending) if (until <= now) pending.delete(name);
    const live = new Set([...this.o.recorded(t.namespace), ...pending.keys()]);
    if (live.size >= this.o.maxPerNamespace) {
      throw new StatusError(
        'TooManyRequests',
        `namespace ${t.namespace} has ${live.size} live fast-path claims, the cap is ${this.o.maxPerNamespace} (--fast-path-max-claims-per-namespace); delete one or create a SandboxClaim instead`,
        { name: t.name, retryAfterSeconds: 10 },
      );
    }
    pending.set(t.name, now + this.o.holdMs);
    this.#inFlight.set(t.namespace, pending);
  }

  /** `t` no longer needs counting here: it was not delivered, or its record is written. */
  release(t: ClaimTarget): void {
    const pending = this.#inFlight.get(t.namespace);
    pending?.delete(t.name);
    if (pending?.size === 0) this.#inFlight.delete(t.namespace);
  }
}
