import { realTimers, type Timers } from '@sandbox-scale/kube-runtime';

export interface AnswersInFlightOptions {
  /** How long no answer must have been in flight before deferred work runs freely. Default 5 ms. */
  quietMs?: number;
  /**
   * How long a deferred job yields to answers that keep coming before it may take a busy slot.
   * Default 2 s (DEFAULT_ANSWERS_MAX_DEFER_MS); 0 makes a job eligible for a busy slot at once.
   */
  maxDeferMs?: number;
  /**
   * Deferred jobs that may run at once, once they have waited maxDeferMs, while answers are still
   * being served, so none starves. Default 1: a record is three API writes whose replies and
   * watch events are parsed on the loop that answers; bench:fast-path answered 822 claims/s at
   * concurrency 64 with one against 609-613 with two, every record landing as soon after the
   * burst.
   */
  busySlots?: number;
  timers?: Timers;
}

export const DEFAULT_ANSWERS_QUIET_MS = 5;
export const DEFAULT_ANSWERS_BUSY_SLOTS = 1;
/**
 * A record's writes cost the API server (on the same cores, in a small cluster) several times
 * what the node's answer costs; written while a burst is still being answered they slow every
 * answer of it, the direct node call included. Two seconds covers a burst of thousands of claims
 * and stays well inside a record attempt's 10 s deadline, which the wait is part of.
 */
export const DEFAULT_ANSWERS_MAX_DEFER_MS = 2_000;

/** Ends a turn; idempotent. */
export type EndTurn = () => void;

/** A waiting job: called with whether it runs on a busy slot; `since` is when it began to wait. */
interface Waiter {
  grant: (busy: boolean) => void;
  since: number;
}

/**
 * The fast path's answers being served, so work that can wait yields to them. The Bound record
 * of a fast-path claim (a create, a status apply, a Secret: several API round trips and their
 * parsing, on this process's one event loop and on the API server's CPU) is written after the
 * answer; written while a burst of claims is still being answered, it would take the CPU the
 * answers need. So while answers are in flight (or ended less than `quietMs` ago) a record waits,
 * and only once it has waited `maxDeferMs` does it take one of `busySlots` slots; once the
 * answers pause, every waiting record goes (the record queue's own concurrency bounds them then).
 * Records keep moving under any load, a burst is answered first and recorded as it pauses, and a
 * record held meanwhile is still the record queue's (bounded, drained on shutdown; a process that
 * dies leaves it to the orphan pass).
 */
export class AnswersInFlight {
  readonly #quietMs: number;
  readonly #maxDeferMs: number;
  readonly #busySlots: number;
  readonly #timers: Timers;
  #inFlight = 0;
  #lastEnd = Number.NEGATIVE_INFINITY;
  #busyRunning = 0;
  // waiting jobs in arrival order, so the first is the longest waiting
  readonly #waiters = new Set<Waiter>();
  // the one timer that looks again when the answers may have paused or the oldest wait is over
  #check: unknown;
  #checkAt = Number.POSITIVE_INFINITY;

  constructor(o: AnswersInFlightOptions = {}) {
    this.#quietMs = o.quietMs ?? DEFAULT_ANSWERS_QUIET_MS;
    this.#maxDeferMs = Math.max(0, o.maxDeferMs ?? DEFAULT_ANSWERS_MAX_DEFER_MS);
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
      if (this.#inFlight === 0 && this.#waiters.size > 0) this.#schedule();
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
   * Resolves when the job may run: at once when the answers have paused; otherwise when they
   * pause, or once it has waited maxDeferMs and a busy slot is free, or as soon as `signal`
   * aborts (the caller then sees its own signal aborted). Never rejects. The job calls the
   * returned function when it is done.
   */
  turn(signal?: AbortSignal): Promise<EndTurn> {
    if (signal?.aborted === true || this.#isQuiet()) return Promise.resolve(noop);
    if (this.#maxDeferMs === 0 && this.#busyRunning < this.#busySlots) return Promise.resolve(this.#busyTurn());
    return new Promise<EndTurn>((resolve) => {
      const waiter: Waiter = {
        since: this.#timers.now(),
        grant: (busy) => {
          if (!this.#waiters.delete(waiter)) return;
          signal?.removeEventListener('abort', onAbort);
          resolve(busy ? this.#busyTurn() : noop);
        },
      };
      const onAbort = (): void => waiter.grant(false);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiters.add(waiter);
      this.#schedule();
    });
  }

  #busyTurn(): EndTurn {
    this.#busyRunning++;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.#busyRunning--;
      this.#look();
    };
  }

  #isQuiet(): boolean {
    return this.#inFlight === 0 && this.#timers.now() - this.#lastEnd >= this.#quietMs;
  }

  /** Grants what may run now and sets the timer for the next moment something may. */
  #look(): void {
    if (this.#isQuiet()) {
      for (const w of [...this.#waiters]) w.grant(false);
      return;
    }
    const now = this.#timers.now();
    // free slots go to the longest waiting jobs whose wait is over
    for (const w of this.#waiters) {
      if (this.#busyRunning >= this.#busySlots || now - w.since < this.#maxDeferMs) break;
      w.grant(true);
    }
    this.#schedule();
  }

  #schedule(): void {
    if (this.#waiters.size === 0) return;
    const now = this.#timers.now();
    // answers ended: they may have paused quietMs after the last one (one still in flight
    // reschedules this when it ends)
    let at = this.#inFlight === 0 ? this.#lastEnd + this.#quietMs : Number.POSITIVE_INFINITY;
    // a slot is free: the oldest waiter may take it when its wait is over (a busy job ending
    // looks again by itself)
    const oldest = this.#waiters.values().next();
    if (this.#busyRunning < this.#busySlots && oldest.done !== true) at = Math.min(at, oldest.value.since + this.#maxDeferMs);
    if (at === Number.POSITIVE_INFINITY || at >= this.#checkAt) return;
    if (this.#check !== undefined) this.#timers.clearTimeout(this.#check);
    this.#checkAt = at;
    this.#check = this.#timers.setTimeout(
      () => {
        this.#check = undefined;
        this.#checkAt = Number.POSITIVE_INFINITY;
        this.#look();
      },
      Math.max(0, at - now),
    );
  }
}

const noop: EndTurn = () => undefined;
