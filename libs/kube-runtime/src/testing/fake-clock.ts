import { sleep, type Sleep } from '@sandbox-scale/scale-core';
import type { Timers } from '../time';

interface Pending {
  id: number;
  due: number;
  fn: () => void;
}

/**
 * Manual time for tests of anything that takes `Timers`, `now` or `sleep`: nothing fires until
 * advance() is called, and promise callbacks get to run between timers.
 */
export class FakeClock implements Timers {
  private t: number;
  private seq = 0;
  private pending: Pending[] = [];

  constructor(startMs = 1_700_000_000_000) {
    this.t = startMs;
  }

  now = (): number => this.t;

  setTimeout = (fn: () => void, ms: number): unknown => {
    const id = ++this.seq;
    this.pending.push({ id, due: this.t + Math.max(0, ms), fn });
    return id;
  };

  clearTimeout = (handle: unknown): void => {
    this.pending = this.pending.filter((p) => p.id !== handle);
  };

  /** scale-core's sleep on this clock's timers. */
  sleep: Sleep = (ms, signal, opts) => sleep(ms, signal, { ...opts, timers: this });

  get timersPending(): number {
    return this.pending.length;
  }

  /** Moves time forward, firing due timers in order and letting microtasks settle after each. */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      await settle();
      const next = this.pending.filter((p) => p.due <= end).sort((a, b) => a.due - b.due || a.id - b.id)[0];
      if (!next) break;
      this.pending = this.pending.filter((p) => p !== next);
      this.t = Math.max(this.t, next.due);
      next.fn();
    }
    this.t = end;
    await settle();
  }
}

/** Lets pending promise callbacks run (several hops deep). */
export async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}
