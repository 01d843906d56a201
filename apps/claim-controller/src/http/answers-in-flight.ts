import { realTimers, type Timers } from '@sandbox-scale/kube-runtime';

export interface AnswersInFlightOptions {
  /** How long no answer must have been in flight before deferred work goes ahead. Default 5 ms. */
  quietMs?: number;
  /** The longest deferred work waits however busy the fast path stays, so it never starves. Default 2 s. */
  maxWaitMs?: number;
  timers?: Timers;
}

export const DEFAULT_ANSWERS_QUIET_MS = 5;
export const DEFAULT_ANSWERS_MAX_WAIT_MS = 2_000;

/**
 * The fast path's answers being served, so work that can wait yields to them. The Bound record
 * of a fast-path claim (a create, a status apply, a Secret, an event: several API round trips and
 * their parsing, on this process's one event loop and on the API server's CPU) is written after
 * the answer; written while a burst of claims is still being answered, it would take the CPU the
 * answers need. So a record waits until no answer has been in flight for `quietMs`, or at most
 * `maxWaitMs`: a steady stream of claims delays its records by that much, never longer, and a
 * record held meanwhile is still the record queue's (bounded, drained on shutdown; a process that
 * dies leaves it to the orphan pass, as any record not yet written).
 */
export class AnswersInFlight {
  readonly #quietMs: number;
  readonly #maxWaitMs: number;
  readonly #timers: Timers;
  #inFlight = 0;
  #lastEnd = Number.NEGATIVE_INFINITY;
  readonly #waiters = new Set<() => void>();
  // the one timer that looks again once the last answer has been over for quietMs
  #check: unknown;

  constructor(o: AnswersInFlightOptions = {}) {
    this.#quietMs = o.quietMs ?? DEFAULT_ANSWERS_QUIET_MS;
    this.#maxWaitMs = o.maxWaitMs ?? DEFAULT_ANSWERS_MAX_WAIT_MS;
    this.#timers = o.timers ?? realTimers;
  }

  /** An answer starts; the returned function (idempotent) ends it. */
  begin(): () => void {
    this.#inFlight++;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.#inFlight--;
      this.#lastEnd = this.#timers.now();
      if (this.#inFlight === 0 && this.#waiters.size > 0) this.#scheduleCheck();
    };
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  /** Work waiting for the answers to pause. */
  get waiting(): number {
    return this.#waiters.size;
  }

  /**
   * Resolves once no answer has been in flight for quietMs, after maxWaitMs at the latest, or as
   * soon as `signal` aborts (the caller then sees its own signal aborted). Never rejects.
   */
  quiet(signal?: AbortSignal): Promise<void> {
    if (this.#isQuiet() || signal?.aborted === true) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = (): void => {
        if (!this.#waiters.delete(done)) return;
        this.#timers.clearTimeout(deadline);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const deadline = this.#timers.setTimeout(done, this.#maxWaitMs);
      signal?.addEventListener('abort', done, { once: true });
      this.#waiters.add(done);
      if (this.#inFlight === 0) this.#scheduleCheck();
    });
  }

  #isQuiet(): boolean {
    return this.#inFlight === 0 && this.#timers.now() - this.#lastEnd >= this.#quietMs;
  }

  #scheduleCheck(): void {
    if (this.#check !== undefined) return;
    const wait = Math.max(0, this.#lastEnd + this.#quietMs - this.#timers.now());
    this.#check = this.#timers.setTimeout(() => {
      this.#check = undefined;
      if (this.#isQuiet()) for (const release of [...this.#waiters]) release();
      // an answer ended since this was set: look again when that one has been over quietMs;
      // one still in flight schedules the check itself when it ends
      else if (this.#inFlight === 0 && this.#waiters.size > 0) this.#scheduleCheck();
    }, wait);
  }
}
