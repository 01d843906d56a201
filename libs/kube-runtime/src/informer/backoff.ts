/** Capped exponential delay: `initialMs * 2^failures`, never above `maxMs`. */
export function backoffDelay(failures: number, initialMs: number, maxMs: number): number {
  if (failures <= 0) return initialMs;
  // Exponents past ~1000 overflow to Infinity; the cap makes that harmless.
  return Math.min(maxMs, initialMs * 2 ** Math.min(failures, 1024));
}

export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
}

/** Stateful form for one retry loop: the watch restart delay (1 s doubling to 30 s, reset on progress). */
export class Backoff {
  private failures = 0;

  constructor(private readonly opts: BackoffOptions) {}

  /** The delay before the next attempt; each call counts one more failure. */
  next(): number {
    const d = backoffDelay(this.failures, this.opts.initialMs, this.opts.maxMs);
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
