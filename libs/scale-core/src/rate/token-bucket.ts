import { SandboxScaleError } from '../errors/base';

export interface TokenBucketOptions {
  /** Tokens added per second. */
  readonly ratePerSecond: number;
  /** Most tokens held at once (the largest burst); default one second's worth. */
  readonly burst?: number;
  /** Monotonic milliseconds; default performance.now. */
  readonly now?: () => number;
}

export class InvalidRateError extends SandboxScaleError {}

/**
 * A rate bound that never blocks: `take()` either spends a token now (0) or says how long until
 * one is free, so a reconciler can requeue for that long instead of sleeping. Callers that are
 * refused do not reserve a token; the first to come back after the refill gets it.
 */
export class TokenBucket {
  readonly #rate: number;
  readonly #burst: number;
  readonly #now: () => number;
  #tokens: number;
  #atMs: number;

  constructor(o: TokenBucketOptions) {
    const burst = o.burst ?? Math.max(1, o.ratePerSecond);
    if (!(o.ratePerSecond > 0) || !(burst >= 1))
      throw new InvalidRateError(`a token bucket needs ratePerSecond > 0 and burst >= 1, got ${o.ratePerSecond} and ${burst}`);
    this.#rate = o.ratePerSecond;
    this.#burst = burst;
    this.#now = o.now ?? (() => performance.now());
    this.#tokens = burst;
    this.#atMs = this.#now();
  }

  /**
   * 0 when a token was spent; otherwise the milliseconds until the next token (nothing spent).
   * `nowMs` is for callers that keep their own clock (one reading for many buckets).
   */
  take(nowMs: number = this.#now()): number {
    this.#refill(nowMs);
    if (this.#tokens >= 1) {
      this.#tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - this.#tokens) * 1000) / this.#rate);
  }

  /** Whether the bucket is back to its whole burst: a keyed owner may forget it, a new one is the same. */
  isFull(nowMs: number = this.#now()): boolean {
    this.#refill(nowMs);
    return this.#tokens >= this.#burst;
  }

  #refill(nowMs: number): void {
    this.#tokens = Math.min(this.#burst, this.#tokens + (Math.max(0, nowMs - this.#atMs) * this.#rate) / 1000);
    this.#atMs = Math.max(this.#atMs, nowMs);
  }
}
