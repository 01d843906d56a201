import { backoffDelayMs, type BackoffOptions } from '@sandbox-scale/scale-core';

/** scale-core's backoff shape; defaults 5 ms doubling to 1000 s, as controller-runtime. */
export type ItemBackoffOptions = Partial<BackoffOptions>;

/** Per-key exponential backoff: each failure of a key doubles its next delay; forget() resets it. */
export class ItemBackoff {
  private readonly failures = new Map<string, number>();
  private readonly opts: BackoffOptions;

  constructor(opts: ItemBackoffOptions = {}) {
    this.opts = { ...opts, baseMs: opts.baseMs ?? 5, maxMs: opts.maxMs ?? 1_000_000 };
  }

  /** The delay before retrying key, counting this failure. */
  when(key: string): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    return backoffDelayMs(n, this.opts);
  }

  retries(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  forget(key: string): void {
    this.failures.delete(key);
  }
}
