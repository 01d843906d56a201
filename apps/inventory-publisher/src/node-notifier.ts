import type { Logger } from '@sandbox-scale/kube-runtime';
import type { InventoryEntry, NodeNotice, NoticeOutcome } from '@sandbox-scale/scale-core';

export interface NoticeSender {
  /** The replicas to tell (host:port), as the Service's EndpointSlices list them now. */
  targets(): readonly string[];
  send(target: string, notice: NodeNotice): Promise<NoticeOutcome>;
}

export type NoticeResult = NoticeOutcome | 'full' | 'failed';

/** An entry's identity on its node: the sandboxd id (every published entry has one), else its name. */
export function entryKey(e: InventoryEntry): string {
  return e.id ?? e.name;
}

/** Changes from `prev` to `next`: changed or added entries by key, removed ones as null. Empty when the same. */
export function diffEntries(
  prev: ReadonlyMap<string, InventoryEntry>,
  next: ReadonlyMap<string, InventoryEntry>,
): Map<string, InventoryEntry | null> {
  const changes = new Map<string, InventoryEntry | null>();
  for (const [key, e] of next) {
    const old = prev.get(key);
    if (old === undefined || JSON.stringify(old) !== JSON.stringify(e)) changes.set(key, e);
  }
  for (const key of prev.keys()) if (!next.has(key)) changes.set(key, null);
  return changes;
}

/** The delta one replica is still to be told: from the change at `base` to the read at `seq`. */
interface Pending {
  base: number;
  seq: number;
  changes: Map<string, InventoryEntry | null>;
}

export interface NodeNotifierOptions {
  node: string;
  sender: NoticeSender;
  log: Logger;
  /** Counts each notice by how it ended. */
  onResult?: (result: NoticeResult) => void;
}

/**
 * Turns the publisher's sandboxd reads into notices for every sandbox-apiserver replica. Each
 * read that changed the node's entries is one delta; a replica is told one notice at a time, and
 * deltas that pile up behind a slow one are merged, so a replica never holds more than one
 * pending delta per node. A replica whose view is older than the delta's base (it missed one, or
 * started since) answers `conflict` and is sent the whole set instead. A replica that cannot be
 * reached is not retried: the next change reaches it as a whole set, the next publish anyway.
 */
export class NodeNotifier {
  #view: Map<string, InventoryEntry> | undefined;
  /** The read at which the entries last changed, and the latest read (the view holds for both). */
  #changedAt = 0;
  #seq = 0;
  readonly #pending = new Map<string, Pending>();
  readonly #sending = new Map<string, Promise<void>>();

  constructor(private readonly o: NodeNotifierOptions) {}

  /** A read of sandboxd at `seq` returned these entries. The first read only sets the view: the publish reports it. */
  observed(seq: number, entries: readonly InventoryEntry[]): void {
    const next = new Map(entries.map((e) => [entryKey(e), e]));
    if (seq <= this.#seq) return;
    this.#seq = seq;
    if (this.#view === undefined) {
      this.#view = next;
      this.#changedAt = seq;
      return;
    }
    const changes = diffEntries(this.#view, next);
    if (changes.size === 0) return;
    const base = this.#changedAt;
    this.#view = next;
    this.#changedAt = seq;
    for (const target of this.o.sender.targets()) {
      const p = this.#pending.get(target);
      if (p === undefined) this.#pending.set(target, { base, seq, changes: new Map(changes) });
      else {
        p.seq = seq;
        for (const [k, v] of changes) p.changes.set(k, v);
      }
      if (!this.#sending.has(target)) this.#sending.set(target, this.#pump(target));
    }
  }

  /** Settles when every notice started so far has ended (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.#sending.size > 0) await Promise.all(this.#sending.values());
  }

  async #pump(target: string): Promise<void> {
    try {
      for (let p = this.#pending.get(target); p !== undefined; p = this.#pending.get(target)) {
        this.#pending.delete(target);
        const entries: InventoryEntry[] = [];
        const removed: string[] = [];
        for (const [k, v] of p.changes)
          if (v === null) removed.push(k);
          else entries.push(v);
        await this.#tell(target, { node: this.o.node, seq: p.seq, base: p.base, entries, ...(removed.length > 0 ? { removed } : {}) });
      }
    } finally {
      this.#sending.delete(target);
    }
  }

  async #tell(target: string, notice: NodeNotice): Promise<void> {
    try {
      let outcome = await this.o.sender.send(target, notice);
      let result: NoticeResult = outcome;
      if (outcome === 'conflict' && this.#view !== undefined) {
        // the replica's view predates the delta's base: the whole set, as of the latest read
        outcome = await this.o.sender.send(target, { node: this.o.node, seq: this.#seq, entries: [...this.#view.values()] });
        result = outcome === 'applied' ? 'full' : outcome;
      }
      this.o.onResult?.(result);
    } catch (err) {
      this.o.onResult?.('failed');
      this.o.log.warn(
        { err, target, seq: notice.seq },
        'a sandbox-apiserver replica did not take a node notice; it sees the change at the next publish',
      );
    }
  }
}
