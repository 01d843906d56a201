import { backoffDelayMs, type BackoffOptions } from '@sandbox-scale/scale-core';

/**
 * scale-core's backoff (`baseMs · 2^failures`, capped at `maxMs`) with its failure count kept:
 * the watch restart delay (1 s doubling to 30 s, reset on progress).
 */
export class Backoff {
  private failures = 0;

  constructor(private readonly opts: BackoffOptions) {}

  /** The delay before the next attempt; each call counts one more failure. */
  next(): number {
    const d = backoffDelayMs(this.failures, this.opts);
    this.failures++;
    return d;
  }

  reset(): void {
    this.failures = 0;
  }

  get attempts(): number {
    return this.failures;
  }
}
