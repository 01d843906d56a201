import { SandboxScaleError } from '../errors/base';
import type { Rng } from '../node-choice/random';

export interface BackoffOptions {
  /** Delay before the first retry (attempt 0), doubled per attempt. */
  readonly baseMs: number;
  /** Cap on any single delay. */
  readonly maxMs: number;
  /**
   * Fraction in [0, 1] of each delay that is randomised away: the delay is drawn uniformly from
   * [d·(1−jitter), d]. Spreads retries of many callers that failed together. 0 = deterministic.
   */
  readonly jitter?: number;
  readonly rng?: Rng;
}

export class InvalidBackoffOptionsError extends SandboxScaleError {}

function checkBackoff(o: BackoffOptions): void {
  const jitter = o.jitter ?? 0;
  if (!(o.baseMs >= 0) || !(o.maxMs >= o.baseMs) || !(jitter >= 0 && jitter <= 1)) {
    throw new InvalidBackoffOptionsError(
      `backoff needs 0 <= baseMs <= maxMs and 0 <= jitter <= 1, got baseMs=${o.baseMs} maxMs=${o.maxMs} jitter=${jitter}`,
    );
  }
}

/** Exponential backoff: min(maxMs, baseMs·2^attempt), minus up to `jitter` of it. attempt counts from 0. */
export function backoffDelayMs(attempt: number, opts: BackoffOptions): number {
  checkBackoff(opts);
  const exp = Math.min(Math.max(0, Math.floor(attempt)), 1023);
  const d = Math.min(opts.maxMs, opts.baseMs * 2 ** exp);
  const jitter = opts.jitter ?? 0;
  if (jitter === 0) return d;
  const r = (opts.rng ?? Math.random)();
  return d * (1 - jitter * r);
}

/** A source of timers (the platform's by default; a manual clock in tests and the simulator). */
export interface TimerSource {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const platformTimers: TimerSource = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

export interface SleepOptions {
  /** Keep the process alive while sleeping (a script polling for a result); servers leave it off. */
  holdProcess?: boolean;
  /**
   * What an abort does: `reject` with the signal's reason (the default: a retry or a call stops
   * where it is), or `resolve` early, for loops that re-check their stop flag after each wait.
   */
  onAbort?: 'reject' | 'resolve';
  /** Whose time to wait on; the platform's timers by default. */
  timers?: TimerSource;
}

/** Sleeps `ms`, or ends early as soon as the signal aborts (rejecting unless told to resolve). */
export type Sleep = (ms: number, signal?: AbortSignal, opts?: SleepOptions) => Promise<void>;

/** The one timer-based Sleep; unless asked to, it never keeps the process alive on its own. */
export const sleep: Sleep = (ms, signal, opts) =>
  new Promise<void>((resolve, reject) => {
    const end = (): void => (opts?.onAbort === 'resolve' ? resolve() : reject(signal?.reason));
    if (signal?.aborted) {
      end();
      return;
    }
    const timers = opts?.timers ?? platformTimers;
    const onAbort = (): void => {
      timers.clearTimeout(timer);
      end();
    };
    const timer = timers.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    if (opts?.holdProcess !== true) (timer as { unref?: () => void } | undefined)?.unref?.();
    signal?.addEventListener('abort', onAbort, { once: true });
  });

export interface RetryOptions extends BackoffOptions {
  /** Total tries including the first; Infinity retries until success, abort, or a non-retryable error. */
  readonly attempts: number;
  /** Which errors are worth another try; default: all. A false answer rethrows at once. */
  readonly shouldRetry?: (err: unknown, attempt: number) => boolean;
  /** Stops waiting and retrying; the pending sleep rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /** Injected in tests so backoff is exercised without real time. */
  readonly sleep?: Sleep;
  /** Told about each failure that will be retried, with the delay chosen. */
  readonly onRetry?: (err: unknown, attempt: number, delayMs: number) => void;
}

/**
 * Runs `fn` until it resolves, backing off between failures. The error of the last attempt is
 * thrown unchanged once attempts run out or `shouldRetry` says no; an abort rejects with the
 * signal's reason. `fn` gets the attempt number (0-based) and the signal.
 */
export async function retry<T>(fn: (attempt: number, signal?: AbortSignal) => Promise<T>, opts: RetryOptions): Promise<T> {
  checkBackoff(opts);
  if (!(opts.attempts >= 1)) throw new InvalidBackoffOptionsError(`attempts must be >= 1, got ${opts.attempts}`);
  const doSleep = opts.sleep ?? sleep;
  for (let attempt = 0; ; attempt++) {
    if (opts.signal?.aborted) throw opts.signal.reason;
    try {
      return await fn(attempt, opts.signal);
    } catch (err) {
      const last = attempt + 1 >= opts.attempts;
      if (last || opts.signal?.aborted || (opts.shouldRetry && !opts.shouldRetry(err, attempt))) throw err;
      const delayMs = backoffDelayMs(attempt, opts);
      opts.onRetry?.(err, attempt, delayMs);
      await doSleep(delayMs, opts.signal);
    }
  }
}
