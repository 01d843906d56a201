export interface EventuallyOptions {
  timeoutMs?: number;
  intervalMs?: number;
  /** Whether an error is worth another try; false rethrows it at once (a state the check can never leave). Default: every error. */
  retryOn?: (err: unknown) => boolean;
}

/** Polls `check` until it returns without throwing; rethrows its last error at the deadline. */
export async function eventually<T>(check: () => Promise<T> | T, opts: EventuallyOptions = {}): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const intervalMs = opts.intervalMs ?? 100;
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (opts.retryOn && !opts.retryOn(err)) throw err;
      lastErr = err;
    }
    if (Date.now() >= deadline) break;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw lastErr instanceof Error ? lastErr : new Error(String(lastErr));
}
