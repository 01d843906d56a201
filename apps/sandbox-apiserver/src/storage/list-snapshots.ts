import { randomInt } from 'node:crypto';
import type { RowsSnapshot } from './sorted-rows';

export interface ListSnapshot {
  /** Names the snapshot in continue tokens; unique within this process. */
  readonly id: number;
  readonly rows: RowsSnapshot;
}

export interface ListSnapshotsOptions {
  /** Most snapshots kept for continue tokens; the least recently used goes first. */
  readonly max?: number;
  /** A snapshot no page has read for this long is dropped (kube's etcd compaction is 5 min). */
  readonly idleMs?: number;
  readonly now?: () => number;
}

interface Kept {
  readonly snap: ListSnapshot;
  usedAt: number;
}

/**
 * The snapshots paged lists are served from (as in kube-apiserver, every page of one list comes
 * from the state its first page saw). Building one is a merge of the cache's changes; lists
 * started while nothing changed share it. A token naming a snapshot no longer kept, or one
 * from another process (the epoch differs), is answered 410 Expired by the caller.
 */
export class ListSnapshots {
  /** Differs per process, so a token from another replica or an earlier run is never misread. */
  readonly epoch = randomInt(1, 2 ** 31);
  readonly #kept = new Map<number, Kept>();
  readonly #max: number;
  readonly #idleMs: number;
  readonly #now: () => number;
  #nextId = 1;
  #newest: ListSnapshot | undefined;

  constructor(
    private readonly source: () => RowsSnapshot,
    opts: ListSnapshotsOptions = {},
  ) {
    this.#max = opts.max ?? 16;
    this.#idleMs = opts.idleMs ?? 300_000;
    this.#now = opts.now ?? Date.now;
  }

  /** The snapshot of the cache as it is now, kept for the pages that follow. */
  current(): ListSnapshot {
    const rows = this.source();
    const snap = this.#newest?.rows === rows ? this.#newest : { id: this.#nextId++, rows };
    this.#newest = snap;
    this.#touch(snap);
    return snap;
  }

  /** A kept snapshot by id, or undefined when it has been dropped. */
  get(epoch: number, id: number): ListSnapshot | undefined {
    if (epoch !== this.epoch) return undefined;
    const kept = this.#kept.get(id);
    if (kept === undefined || this.#now() - kept.usedAt > this.#idleMs) return undefined;
    this.#touch(kept.snap);
    return kept.snap;
  }

  get size(): number {
    return this.#kept.size;
  }

  #touch(snap: ListSnapshot): void {
    const now = this.#now();
    // re-inserted so the Map's order is least recently used first
    this.#kept.delete(snap.id);
    this.#kept.set(snap.id, { snap, usedAt: now });
    for (const [id, k] of this.#kept) {
      if (this.#kept.size <= this.#max && now - k.usedAt <= this.#idleMs) break;
      this.#kept.delete(id);
    }
  }
}
