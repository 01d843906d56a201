import { FAILURES_BEFORE_BACKOFF, Pool, TRIM_AFTER_MS, type PoolSettings } from './pool';
import type { SimKey } from './wire-key';

/** What the pool set needs from its node. */
export interface RefillHost {
  now(): number;
  readonly draining: boolean;
  readonly refillConcurrency: number;
  /** Boots one clone of the key; resolves with its duration, rejects when it fails. */
  provision(key: SimKey, tier: 'clone' | 'cold'): Promise<number>;
  /** One-time cold boot + snapshot of a new pool; rejects when it fails. */
  buildGolden(key: SimKey): Promise<void>;
  /** False when the node cannot start another VM (refill then parks for 30 s). */
  hasVmRoom(): boolean;
  park(reason: string): void;
  isParked(): boolean;
  /** Schedules fn after ms on the node's clock. */
  later(ms: number, fn: () => void): void;
}

export interface DesiredPool {
  key: SimKey;
  settings: PoolSettings;
}

const GOLDEN_RETRY_MS = 30_000;

/**
 * The node's pools and their refill: clones start while warm + refilling < target, at most
 * refill_concurrency per pool and 2 × refill_concurrency node-wide, on the refill tick and
 * right after any claim of the key.
 */
export class PoolSet {
  readonly #pools = new Map<string, Pool>();
  #inflight = 0;

  constructor(private readonly host: RefillHost) {}

  get(key: SimKey): Pool | undefined {
    return this.#pools.get(key.id);
  }

  list(): Pool[] {
    return [...this.#pools.values()];
  }

  warmTotal(): number {
    let n = 0;
    for (const p of this.#pools.values()) n += p.warm;
    return n;
  }

  refillInflight(): number {
    return this.#inflight;
  }

  /**
   * Wholesale replacement: pools not in `desired` retire (warm VMs destroyed now, in-flight
   * work destroyed when it lands); warm VMs above a lowered target go at once.
   */
  apply(desired: readonly DesiredPool[]): void {
    const wanted = new Map(desired.map((d) => [d.key.id, d]));
    for (const [id, pool] of this.#pools) {
      if (wanted.has(id)) continue;
      pool.retired = true;
      pool.warm = 0;
      this.#pools.delete(id);
    }
    for (const d of desired) {
      const existing = this.#pools.get(d.key.id);
      if (existing) {
        existing.settings = d.settings;
        existing.warm = Math.min(existing.warm, existing.target(this.host.now()));
      } else {
        this.#pools.set(d.key.id, new Pool(d.key, d.settings));
      }
    }
    this.refillAll();
  }

  /** Destroys every unclaimed warm VM (drain). */
  dropWarm(): void {
    for (const p of this.#pools.values()) p.warm = 0;
  }

  /** Takes one warm VM, last in first out; a popped VM never returns. */
  pop(key: SimKey): boolean {
    const pool = this.#pools.get(key.id);
    if (pool === undefined || pool.warm === 0) return false;
    pool.warm--;
    return true;
  }

  refillAll(): void {
    for (const p of this.#pools.values()) this.refill(p);
  }

  refill(pool: Pool): void {
    const now = this.host.now();
    if (pool.retired || this.host.draining) return;
    if (!pool.golden) {
      this.#maybeBuildGolden(pool, now);
      return;
    }
    this.#trim(pool, now);
    if (now < pool.backoffUntil || this.host.isParked()) return;
    const rc = this.host.refillConcurrency;
    while (pool.warm + pool.refilling < pool.target(now) && pool.refilling < rc && this.#inflight < 2 * rc) {
      if (!this.host.hasVmRoom()) {
        this.host.park('vm capacity reached');
        return;
      }
      this.#startClone(pool);
    }
  }

  #trim(pool: Pool, now: number): void {
    const target = pool.target(now);
    if (pool.warm <= target) {
      pool.aboveSince = -1;
    } else if (pool.aboveSince < 0) {
      pool.aboveSince = now;
    } else if (now - pool.aboveSince >= TRIM_AFTER_MS) {
      pool.warm = target;
      pool.aboveSince = -1;
    }
  }

  #maybeBuildGolden(pool: Pool, now: number): void {
    if (pool.goldenBuilding || now < pool.goldenRetryAt) return;
    pool.goldenBuilding = true;
    this.host.buildGolden(pool.key).then(
      () => {
        pool.goldenBuilding = false;
        pool.golden = true;
        this.refill(pool);
      },
      () => {
        pool.goldenBuilding = false;
        pool.goldenRetryAt = this.host.now() + GOLDEN_RETRY_MS;
        this.host.later(GOLDEN_RETRY_MS, () => this.refill(pool));
      },
    );
  }

  #startClone(pool: Pool): void {
    pool.refilling++;
    this.#inflight++;
    this.host.provision(pool.key, 'clone').then(
      (ms) => this.#landed(pool, true, ms),
      () => this.#landed(pool, false, 0),
    );
  }

  #landed(pool: Pool, ok: boolean, ms: number): void {
    const now = this.host.now();
    pool.refilling--;
    this.#inflight--;
    pool.recordProvision(ok, ms, now);
    // A clone joins only a live pool below target on a node that is not draining.
    if (ok && !pool.retired && !this.host.draining && pool.warm < pool.target(now)) pool.warm++;
    // Past the failure threshold the pool waits out its backoff rather than the next tick.
    if (!ok && pool.failures >= FAILURES_BEFORE_BACKOFF) this.host.later(pool.backoffUntil - now, () => this.refill(pool));
  }
}
