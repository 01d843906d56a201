import { sleep as sleepFor } from '@sandbox-scale/scale-core';

/**
 * Time for the simulator. Everything time-based (boot delays, refill and reaper ticks, TTLs)
 * goes through a Clock so tests advance virtual time instead of sleeping.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  setTimer(fn: () => void, delayMs: number): TimerHandle;
  clearTimer(handle: TimerHandle): void;
}

/** Opaque: only the clock that made it can clear it. */
export type TimerHandle = object;

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer: (fn, delayMs) => {
    const t = setTimeout(fn, delayMs);
    // A simulator timer never keeps a process alive on its own; servers do.
    t.unref();
    return t;
  },
  clearTimer: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

interface ManualTimer {
  id: number;
  due: number;
  fn: () => void;
}

/** Resolves after pending I/O callbacks and promise continuations have had a turn. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}

/**
 * A clock that moves only when told. `advance` fires due timers in order, letting promise
 * continuations and socket I/O run between them, so a blocked request completes once the
 * virtual boot time has passed.
 */
export class ManualClock implements Clock {
  #now: number;
  #nextId = 1;
  #timers: ManualTimer[] = [];

  constructor(startMs = Date.parse('2026-07-06T00:00:00Z')) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  setTimer(fn: () => void, delayMs: number): TimerHandle {
    const timer: ManualTimer = { id: this.#nextId++, due: this.#now + Math.max(0, delayMs), fn };
    this.#timers.push(timer);
    return timer;
  }

  clearTimer(handle: TimerHandle): void {
    this.#timers = this.#timers.filter((t) => t !== handle);
  }

  /** Timers waiting to fire (tests wait for a blocked request to register its boot timer). */
  get pendingTimers(): number {
    return this.#timers.length;
  }

  async advance(ms: number): Promise<void> {
    const target = this.#now + ms;
    await settle();
    for (;;) {
      const next = this.#earliestDue(target);
      if (next === undefined) break;
      this.#timers = this.#timers.filter((t) => t !== next);
      this.#now = next.due;
      next.fn();
      await settle();
    }
    this.#now = target;
    await settle();
  }

  #earliestDue(limit: number): ManualTimer | undefined {
    let best: ManualTimer | undefined;
    for (const t of this.#timers) {
      if (t.due <= limit && (best === undefined || t.due < best.due || (t.due === best.due && t.id < best.id))) best = t;
    }
    return best;
  }
}

/** Resolves after `ms` on the clock; 0 resolves on the next microtask (speed 0 = instant). */
export function sleep(clock: Clock, ms: number): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return sleepFor(ms, undefined, {
    timers: { setTimeout: (fn, delayMs) => clock.setTimer(fn, delayMs), clearTimeout: (h) => clock.clearTimer(h as TimerHandle) },
  });
}
