/**
 * Time as a dependency: every wait in the runtime goes through these, so tests drive backoff,
 * lease expiry and requeue delays without real sleeping.
 */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;
export type Now = () => number;

/** Resolves after ms, or early (without rejecting) when the signal aborts: callers re-check their stop flag. */
export const sleep: Sleep = (ms, signal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });

export const systemNow: Now = () => Date.now();

/** Kubernetes MicroTime: RFC 3339 with exactly six fractional digits, as the API server writes it. */
export function toMicroTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** Spreads a period by up to `factor` of itself so that many replicas do not act in lockstep. */
export function jitter(ms: number, factor: number, random: () => number = Math.random): number {
  return ms + ms * factor * random();
}

/** Timer functions as a dependency (work queue delays, event series flushes). */
export interface Timers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  now(): number;
}

// Resolved at call time; timers are unref'd so a pending requeue never holds the process open.
export const realTimers: Timers = {
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref?.();
    return t;
  },
  clearTimeout: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
  now: () => Date.now(),
};
