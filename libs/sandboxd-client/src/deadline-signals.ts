import { EventEmitter } from 'node:events';

/**
 * A call bound shared by every call started within one slice of time (see DeadlineSignals). It
 * has the two faces of an AbortSignal the HTTP client reads — `aborted` and `reason`, and an
 * `abort` event — on an EventEmitter: undici takes either, and registering on an emitter costs
 * about half of what an AbortSignal's EventTarget costs, on every call.
 */
export class CallDeadline extends EventEmitter {
  aborted = false;
  reason: unknown = undefined;

  constructor() {
    super();
    // every call in flight during the slice listens here: that many listeners is expected, not a leak
    this.setMaxListeners(0);
  }

  /** Fires once, with `reason`; later calls do nothing. */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit('abort');
  }
}

interface Slot {
  /** Calls that start before this instant (ms, monotonic) may use the slot's deadline. */
  openUntil: number;
  deadline: CallDeadline;
}

export interface DeadlineSignalsOptions {
  /** Monotonic milliseconds; default performance.now. */
  now?: () => number;
}

/**
 * Timeouts for node calls, shared by every call that starts within the same slice of time.
 * `AbortSignal.timeout` costs a timer, a weak reference and a finalizer per call — tens of
 * microseconds on a loaded host, more than a warm claim's own client-side work. Here one
 * deadline and one timer serve a whole slice: a call's deadline fires with a TimeoutError no
 * sooner than `timeoutMs` after the call started and at most one slice later (a slice is 1/50 of
 * the timeout, at least 1 ms and at most 1 s; 200 ms for the 10 s node-call bound).
 *
 * A slot is listened on only by its calls in flight (undici drops its listener when a request
 * ends), so it holds at most as many listeners as calls run at once.
 */
export class DeadlineSignals {
  readonly #slots = new Map<number, Slot>();
  readonly #now: () => number;

  constructor(o: DeadlineSignalsOptions = {}) {
    this.#now = o.now ?? (() => performance.now());
  }

  /** A deadline that fires (reason: a TimeoutError DOMException) between `timeoutMs` and `timeoutMs` + one slice from now; pass it as CallOptions.deadline. */
  deadline(timeoutMs: number): CallDeadline {
    const now = this.#now();
    const cur = this.#slots.get(timeoutMs);
    if (cur !== undefined && now < cur.openUntil && !cur.deadline.aborted) return cur.deadline;
    const slice = sliceOf(timeoutMs);
    const deadline = new CallDeadline();
    const slot: Slot = { openUntil: now + slice, deadline };
    const timer = setTimeout(() => {
      deadline.abort(new DOMException(`the call did not end within ${timeoutMs} ms`, 'TimeoutError'));
      if (this.#slots.get(timeoutMs) === slot) this.#slots.delete(timeoutMs);
    }, timeoutMs + slice);
    timer.unref?.();
    this.#slots.set(timeoutMs, slot);
    return deadline;
  }
}

/** How long one slot takes new calls: 1/50 of the timeout, within [1 ms, 1 s]. */
export function sliceOf(timeoutMs: number): number {
  return Math.min(1000, Math.max(1, Math.floor(timeoutMs / 50)));
}
