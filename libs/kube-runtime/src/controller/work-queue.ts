import PQueue from 'p-queue';
import { type Timers, realTimers } from '../time';

export interface WorkQueueOptions {
  concurrency: number;
  timers?: Timers;
  /** Called whenever the number of keys waiting to run changes. */
  onDepth?: (depth: number) => void;
  /** process() is meant to handle its own errors; one that escapes lands here. */
  onError?: (key: string, err: unknown) => void;
}

/**
 * Keys, not events: a key waiting to run is added once however often it is enqueued; a key is
 * never processed twice at the same time (re-added while running, it runs again after); at
 * most `concurrency` keys run at once. Delayed adds keep the earliest due time per key.
 */
export class WorkQueue {
  private readonly pq: PQueue;
  private readonly waiting = new Set<string>();
  private readonly running = new Set<string>();
  private readonly dirty = new Set<string>();
  private readonly delayed = new Map<string, { due: number; handle: unknown }>();
  private readonly timers: Timers;
  private process: ((key: string) => Promise<void>) | undefined;
  private shut = false;

  constructor(private readonly opts: WorkQueueOptions) {
    this.pq = new PQueue({ concurrency: Math.max(1, opts.concurrency), autoStart: false });
    this.timers = opts.timers ?? realTimers;
  }

  get depth(): number {
    return this.waiting.size + this.dirty.size;
  }

  get isShutDown(): boolean {
    return this.shut;
  }

  /** Starts running keys (those added before start included) through process, which must not throw. */
  start(process: (key: string) => Promise<void>): void {
    this.process = process;
    this.pq.start();
  }

  add(key: string): void {
    if (this.shut || this.waiting.has(key)) return;
    if (this.running.has(key)) {
      this.dirty.add(key);
      this.reportDepth();
      return;
    }
    this.waiting.add(key);
    this.reportDepth();
    this.pq.add(() => this.run(key)).catch((err: unknown) => this.opts.onError?.(key, err));
  }

  addAfter(key: string, delayMs: number): void {
    if (this.shut) return;
    if (delayMs <= 0) return this.add(key);
    const due = this.timers.now() + delayMs;
    const prev = this.delayed.get(key);
    if (prev && prev.due <= due) return;
    if (prev) this.timers.clearTimeout(prev.handle);
    const handle = this.timers.setTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, delayMs);
    this.delayed.set(key, { due, handle });
  }

  /**
   * Drops the delayed add of `key`, if any (its object is gone: a timer held for it would only
   * wake a reconcile with nothing to do, and holds memory per deleted object until then).
   */
  cancelDelayed(key: string): void {
    const prev = this.delayed.get(key);
    if (prev === undefined) return;
    this.timers.clearTimeout(prev.handle);
    this.delayed.delete(key);
  }

  /** Accepts nothing more and drops what is waiting or delayed; running keys finish (see drain). */
  shutDown(): void {
    this.shut = true;
    for (const { handle } of this.delayed.values()) this.timers.clearTimeout(handle);
    this.delayed.clear();
    this.pq.clear();
    this.waiting.clear();
    this.dirty.clear();
    this.reportDepth();
  }

  /** Resolves when nothing is running. */
  async drain(): Promise<void> {
    if (this.running.size === 0 && this.pq.size === 0) return;
    await this.pq.onIdle();
  }

  private async run(key: string): Promise<void> {
    this.waiting.delete(key);
    this.running.add(key);
    this.reportDepth();
    try {
      await this.process?.(key);
    } finally {
      this.running.delete(key);
      if (this.dirty.delete(key)) this.add(key);
    }
  }

  private reportDepth(): void {
    this.opts.onDepth?.(this.depth);
  }
}
