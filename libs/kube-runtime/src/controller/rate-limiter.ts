import { backoffDelay } from '../informer/backoff';

export interface ItemBackoffOptions {
  /** First retry delay; default 5 ms as controller-runtime. */
  baseMs?: number;
  /** Ceiling; default 1000 s as controller-runtime. */
  maxMs?: number;
}

/** Per-key exponential backoff: each failure of a key doubles its next delay; forget() resets it. */
export class ItemBackoff {
  private readonly failures = new Map<string, number>();
  private readonly baseMs: number;
  private readonly maxMs: number;

  constructor(opts: ItemBackoffOptions = {}) {
    this.baseMs = opts.baseMs ?? 5;
    this.maxMs = opts.maxMs ?? 1_000_000;
  }

  /** The delay before retrying key, counting this failure. */
  when(key: string): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    return backoffDelay(n, this.baseMs, this.maxMs);
  }

  retries(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  forget(key: string): void {
    this.failures.delete(key);
  }
}
