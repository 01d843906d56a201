import { setMaxListeners } from 'node:events';

interface Slot {
  /** Calls that start before this instant (ms, monotonic) may use the slot's signal. */
  openUntil: number;
  signal: AbortSignal;
}

export interface DeadlineSignalsOptions {
  /** Monotonic milliseconds; default performance.now. */
  now?: () => number;
}

/**
 * Timeout signals for node calls, shared by every call that starts within the same slice of
 * time. `AbortSignal.timeout` costs a timer, a weak reference and a finalizer per call — tens of
 * microseconds on a loaded host, more than a warm claim's own client-side work. Here one
 * controller and one timer serve a whole slice: a call's signal aborts with a TimeoutError no
 * sooner than `timeoutMs` after the call started and at most one slice later (a slice is 1/50 of
 * the timeout, at least 1 ms and at most 1 s; 200 ms for the 10 s node-call bound).
 *
 * A slot's signal is listened on only by its calls in flight (undici drops its listener when a
 * request ends), so it holds at most as many listeners as calls run at once.
 */
export class DeadlineSignals {
  readonly #slots = new Map<number, Slot>();
  readonly #now: () => number;

  constructor(o: DeadlineSignalsOptions = {}) {
    this.#now = o.now ?? (() => performance.now());
  }

  /** A signal that aborts (reason: a TimeoutError DOMException) between `timeoutMs` and `timeoutMs` + one slice from now. */
  signal(timeoutMs: number): AbortSignal {
    const now = this.#now();
    const cur = this.#slots.get(timeoutMs);
    if (cur !== undefined && now < cur.openUntil && !cur.signal.aborted) return cur.signal;
    const slice = sliceOf(timeoutMs);
    const ac = new AbortController();
    // every call in flight during the slice listens here: that many listeners is expected, not a leak
    setMaxListeners(0, ac.signal);
    const slot: Slot = { openUntil: now + slice, signal: ac.signal };
    const timer = setTimeout(() => {
      ac.abort(new DOMException(`the call did not end within ${timeoutMs} ms`, 'TimeoutError'));
      if (this.#slots.get(timeoutMs) === slot) this.#slots.delete(timeoutMs);
    }, timeoutMs + slice);
    timer.unref?.();
    this.#slots.set(timeoutMs, slot);
    return ac.signal;
  }
}

/** How long one slot takes new calls: 1/50 of the timeout, within [1 ms, 1 s]. */
export function sliceOf(timeoutMs: number): number {
  return Math.min(1000, Math.max(1, Math.floor(timeoutMs / 50)));
}
