export interface EventuallyOptions {
  timeoutMs?: number;
  intervalMs?: number;
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
      lastErr = err;
    }
    if (Date.now() >= deadline) break;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw lastErr instanceof Error ? lastErr : new Error(String(lastErr));
}
