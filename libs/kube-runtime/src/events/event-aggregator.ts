import { TokenBucket } from '@sandbox-scale/scale-core';

/**
 * Decides, without I/O, what each recorded event costs the API server: the first of a kind is
 * created, repeats within the window only bump a counter written at most once per flush
 * interval, and a token bucket per involved object drops new events from a hot loop.
 */
export interface AggregatorOptions {
  /** New events allowed at once per involved object; default 25 (client-go's spam filter). */
  burst?: number;
  /** One more new event per object per this interval; default 5 min. */
  refillIntervalMs?: number;
  /** A repeat after this much quiet starts a new Event; default 6 min (client-go). */
  windowMs?: number;
  /** Repeats are written at most this often per event; default 30 s. */
  flushIntervalMs?: number;
  /**
   * Series (and per-object buckets) held at once; past it the oldest goes. Default 4096, as
   * client-go's event cache: a controller that records for a stream of short-lived objects
   * (one claim after another) holds a bounded cache, not one series per object of the window.
   */
  maxSeries?: number;
}

export interface SeriesEntry {
  readonly key: string;
  readonly objectKey: string;
  /** Name and namespace of the Event once created. */
  eventName?: string;
  eventNamespace?: string;
  count: number;
  writtenCount: number;
  firstMs: number;
  lastMs: number;
  writtenAtMs: number;
}

export type Decision = { kind: 'create'; entry: SeriesEntry } | { kind: 'repeat'; entry: SeriesEntry } | { kind: 'drop' };

/** How often at most every series and bucket is swept for expired ones. */
const PRUNE_INTERVAL_MS = 1000;

export class EventAggregator {
  private readonly entries = new Map<string, SeriesEntry>();
  private readonly buckets = new Map<string, TokenBucket>();
  private readonly burst: number;
  private readonly refillMs: number;
  private readonly windowMs: number;
  readonly flushIntervalMs: number;
  private readonly pruneIntervalMs: number;
  private readonly maxSeries: number;
  private prunedAtMs = Number.NEGATIVE_INFINITY;

  constructor(opts: AggregatorOptions = {}) {
    this.burst = opts.burst ?? 25;
    this.refillMs = opts.refillIntervalMs ?? 300_000;
    this.windowMs = opts.windowMs ?? 360_000;
    this.flushIntervalMs = opts.flushIntervalMs ?? 30_000;
    this.pruneIntervalMs = Math.min(PRUNE_INTERVAL_MS, this.windowMs);
    this.maxSeries = opts.maxSeries ?? 4096;
  }

  get size(): number {
    return this.entries.size;
  }

  observe(key: string, objectKey: string, nowMs: number): Decision {
    // A sweep of every series is O(n); once per interval keeps a recorder that holds thousands
    // of series (one per claim) at O(1) per event. The series and bucket this event touches are
    // judged exactly below, so the sweep only bounds memory and decides nothing.
    if (nowMs - this.prunedAtMs >= this.pruneIntervalMs || nowMs < this.prunedAtMs) this.prune(nowMs);
    let entry = this.entries.get(key);
    if (entry && this.expired(entry, nowMs)) {
      this.entries.delete(key);
      entry = undefined;
    }
    if (entry) {
      entry.count++;
      entry.lastMs = nowMs;
      return { kind: 'repeat', entry };
    }
    if (!this.take(objectKey, nowMs)) return { kind: 'drop' };
    const created: SeriesEntry = { key, objectKey, count: 1, writtenCount: 0, firstMs: nowMs, lastMs: nowMs, writtenAtMs: nowMs };
    dropOldest(this.entries, this.maxSeries);
    this.entries.set(key, created);
    return { kind: 'create', entry: created };
  }

  /** Created events with unwritten repeats whose flush interval has passed (all of them when force). */
  dueForFlush(nowMs: number, force = false): SeriesEntry[] {
    return [...this.entries.values()].filter(
      (e) => e.eventName !== undefined && e.count > e.writtenCount && (force || nowMs - e.writtenAtMs >= this.flushIntervalMs),
    );
  }

  hasPending(): boolean {
    for (const e of this.entries.values()) if (e.count > e.writtenCount) return true;
    return false;
  }

  markWritten(entry: SeriesEntry, count: number, nowMs: number): void {
    entry.writtenCount = Math.max(entry.writtenCount, count);
    entry.writtenAtMs = nowMs;
  }

  forget(entry: SeriesEntry): void {
    if (this.entries.get(entry.key) === entry) this.entries.delete(entry.key);
  }

  private take(objectKey: string, nowMs: number): boolean {
    let b = this.buckets.get(objectKey);
    if (!b) {
      dropOldest(this.buckets, this.maxSeries);
      b = new TokenBucket({ ratePerSecond: 1000 / this.refillMs, burst: this.burst, now: () => nowMs });
      this.buckets.set(objectKey, b);
    }
    return b.take(nowMs) === 0;
  }

  /** Quiet for longer than the window, with every repeat written (unwritten ones are kept until flushed, so their count is not lost). */
  private expired(e: SeriesEntry, nowMs: number): boolean {
    return nowMs - e.lastMs > this.windowMs && e.count <= e.writtenCount;
  }

  private prune(nowMs: number): void {
    this.prunedAtMs = nowMs;
    for (const [k, e] of this.entries) if (this.expired(e, nowMs)) this.entries.delete(k);
    for (const [k, b] of this.buckets) if (b.isFull(nowMs)) this.buckets.delete(k);
  }
}

/** Makes room for one more entry in `m` (insertion order: the oldest goes first). */
function dropOldest<K, V>(m: Map<K, V>, max: number): void {
  for (const k of m.keys()) {
    if (m.size < max) return;
    m.delete(k);
  }
}
