import type { SleepOptions } from '@sandbox-scale/scale-core';

/**
 * Time as a dependency: every wait in the runtime goes through these, so tests drive backoff,
 * lease expiry and requeue delays without real sleeping.
 */
export type Now = () => number;

/**
 * How the runtime's loops wait (with scale-core's one `sleep`, or an injected one): an abort ends
 * the wait early without rejecting, so each loop re-checks its stop flag; the timer keeps the
 * process alive like the work it paces.
 */
export const LOOP_WAIT: SleepOptions = { onAbort: 'resolve', holdProcess: true };

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
