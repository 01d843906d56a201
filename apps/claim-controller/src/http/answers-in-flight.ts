import { realTimers, type Timers } from '@sandbox-scale/kube-runtime';

export interface AnswersInFlightOptions {
  /** How long no answer must have been in flight before deferred work runs freely. Default 5 ms. */
  quietMs?: number;
  /**
   * Deferred jobs that may run at once while answers are being served, so none starves. Default 1:
   * a record is three API writes whose replies and watch events are parsed on the loop that
   * answers; bench:fast-path answered 822 claims/s at concurrency 64 with one against 609-613
   * with two, every record landing as soon after the burst.
   */
  busySlots?: number;
  timers?: Timers;
}

export const DEFAULT_ANSWERS_QUIET_MS = 5;
export const DEFAULT_ANSWERS_BUSY_SLOTS = 1;

/** Ends a turn; idempotent. */
export type EndTurn = () => void;

/**
 * The fast path's answers being served, so work that can wait yields to them. The Bound record
 * of a fast-path claim (a create, a status apply, a Secret, an event: several API round trips and
 * their parsing, on this process's one event loop and on the API server's CPU) is written after
 * the answer; written while a burst of claims is still being answered, it would take the CPU the
 * answers need. So while answers are in flight (or ended less than `quietMs` ago) only
 * `busySlots` records run at once; once the answers pause, every waiting record goes (the record
 * queue's own concurrency bounds them then). Records keep moving under any load, a burst is
 * answered first and recorded as it pauses, and a record held meanwhile is still the record
 * queue's (bounded, drained on shutdown; a process that dies leaves it to the orphan pass).
 */
export class AnswersInFlight {
  readonly #quietMs: number;
  readonly #busySlots: number;
  readonly #timers: Timers;
  #inFlight = 0;
  #lastEnd = Number.NEGATIVE_INFINITY;
  #busyRunning = 0;
  // waiting jobs in arrival order, each called with whether it runs on a busy slot
  readonly #waiters = new Set<(busy: boolean) => void>();
  // the one timer that looks again once the last answer has been over for quietMs
  #check: unknown;

  constructor(o: AnswersInFlightOptions = {}) {
    this.#quietMs = o.quietMs ?? DEFAULT_ANSWERS_QUIET_MS;
    this.#busySlots = Math.max(1, o.busySlots ?? DEFAULT_ANSWERS_BUSY_SLOTS);
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

  /** Deferred jobs waiting for their turn. */
  get waiting(): number {
    return this.#waiters.size;
  }

  /**
   * Resolves when the job may run: at once when the answers have paused or a busy slot is free,
   * otherwise when either happens, or as soon as `signal` aborts (the caller then sees its own
   * signal aborted). Never rejects. The job calls the returned function when it is done.
   */
  turn(signal?: AbortSignal): Promise<EndTurn> {
    if (signal?.aborted === true || this.#isQuiet()) return Promise.resolve(noop);
    if (this.#busyRunning < this.#busySlots) return Promise.resolve(this.#busyTurn());
    return new Promise<EndTurn>((resolve) => {
      const grant = (busy: boolean): void => {
        if (!this.#waiters.delete(grant)) return;
        signal?.removeEventListener('abort', onAbort);
        resolve(busy ? this.#busyTurn() : noop);
      };
      const onAbort = (): void => grant(false);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiters.add(grant);
      if (this.#inFlight === 0) this.#scheduleCheck();
    });
  }

  #busyTurn(): EndTurn {
    this.#busyRunning++;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.#busyRunning--;
      // the slot goes to the longest waiting job, or to every one when the answers have paused
      if (this.#isQuiet()) this.#releaseAll();
      else {
        const next = this.#waiters.values().next();
        if (next.done !== true) next.value(true);
      }
    };
  }

  #isQuiet(): boolean {
    return this.#inFlight === 0 && this.#timers.now() - this.#lastEnd >= this.#quietMs;
  }

  #releaseAll(): void {
    for (const grant of [...this.#waiters]) grant(false);
  }

  #scheduleCheck(): void {
    if (this.#check !== undefined) return;
    const wait = Math.max(0, this.#lastEnd + this.#quietMs - this.#timers.now());
    this.#check = this.#timers.setTimeout(() => {
      this.#check = undefined;
      if (this.#isQuiet()) this.#releaseAll();
      // an answer ended since this was set: look again when that one has been over quietMs;
      // one still in flight schedules the check itself when it ends
      else if (this.#inFlight === 0 && this.#waiters.size > 0) this.#scheduleCheck();
    }, wait);
  }
}

const noop: EndTurn = () => undefined;
