import { sleep } from '@sandbox-scale/scale-core';

/** What every SDK call accepts: a caller's cancellation and/or a time limit. */
export interface CallOptions {
  signal?: AbortSignal;
  /** Gives up after this long (the whole operation, retries and waits included). */
  timeoutMs?: number;
}

export interface Deadline {
  signal: AbortSignal | undefined;
  /** True when the time limit, not the caller, ended the operation. */
  timedOut(): boolean;
}

/** One signal for the caller's cancellation and the time limit, telling the two apart afterwards. */
export function deadlineOf(o: CallOptions = {}, defaultTimeoutMs?: number): Deadline {
  const ms = o.timeoutMs ?? defaultTimeoutMs;
  const timer = ms !== undefined && ms > 0 ? AbortSignal.timeout(ms) : undefined;
  const signals = [o.signal, timer].filter((s): s is AbortSignal => s !== undefined);
  const signal = signals.length === 0 ? undefined : signals.length === 1 ? signals[0] : AbortSignal.any(signals);
  return { signal, timedOut: () => timer?.aborted === true && o.signal?.aborted !== true };
}

/**
 * Waits `ms` or until `signal` aborts, keeping the process alive: a script awaiting a claim must
 * not exit while it polls.
 */
export function wait(ms: number, signal?: AbortSignal): Promise<void> {
  return sleep(ms, signal, { holdProcess: true });
}
