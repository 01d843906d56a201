import type { SimKey } from './wire-key';

export interface PoolSettings {
  warm: number;
  warmMax: number;
  idleHibernateS: number;
  archiveAfterS: number;
  archiveDeleteAfterS: number;
}

const ALPHA = 0.3;
const RATE_DECAY_S = 60;
/** A pool that failed this many provisions in a row backs off. */
export const FAILURES_BEFORE_BACKOFF = 8;
const BACKOFF_FIRST_MS = 250;
const BACKOFF_MAX_MS = 30_000;
/** Warm VMs above a fallen adaptive target are trimmed after staying above it this long. */
export const TRIM_AFTER_MS = RATE_DECAY_S * 1000;

/**
 * One pool of warm VMs for a key. Warm VMs are indistinguishable until claimed, so the pool
 * holds a count, not objects. All times are node-relative milliseconds.
 */
export class Pool {
  settings: PoolSettings;
  warm = 0;
  refilling = 0;
  golden = false;
  goldenBuilding = false;
  goldenRetryAt = 0;
  /** Dropped by PUT /v1/pools: in-flight work finishes and its VMs are destroyed. */
  retired = false;
  failures = 0;
  backoffMs = 0;
  backoffUntil = 0;
  aboveSince = -1;
  #rate = 0;
  #lastClaimAt = -1;
  #leadS = 0;

  constructor(
    readonly key: SimKey,
    settings: PoolSettings,
  ) {
    this.settings = settings;
  }

  /** The effective watermark: the floor, or the demand-adaptive target when warmMax > 0. */
  target(now: number): number {
    const { warm, warmMax } = this.settings;
    if (warmMax <= 0) return warm;
    const idleS = this.#lastClaimAt < 0 ? 0 : (now - this.#lastClaimAt) / 1000;
    const rate = this.#rate * Math.exp(-idleS / RATE_DECAY_S);
    return Math.max(warm, Math.min(Math.ceil(rate * this.#leadS * 2), warmMax));
  }

  /** EWMA of the claim arrival rate (claims per second), hit or miss. */
  recordClaim(now: number): void {
    if (this.#lastClaimAt >= 0) {
      const gapS = Math.max(now - this.#lastClaimAt, 1) / 1000;
      this.#rate = ALPHA * (1 / gapS) + (1 - ALPHA) * this.#rate;
    }
    this.#lastClaimAt = now;
  }

  recordProvision(ok: boolean, durationMs: number, now: number): void {
    if (ok) {
      this.#leadS = this.#leadS === 0 ? durationMs / 1000 : ALPHA * (durationMs / 1000) + (1 - ALPHA) * this.#leadS;
      this.failures = 0;
      this.backoffMs = 0;
      this.backoffUntil = 0;
      return;
    }
    this.failures++;
    if (this.failures >= FAILURES_BEFORE_BACKOFF) {
      this.backoffMs = this.backoffMs === 0 ? BACKOFF_FIRST_MS : Math.min(this.backoffMs * 2, BACKOFF_MAX_MS);
      this.backoffUntil = now + this.backoffMs;
    }
  }
}
