import {
  entryFingerprint,
  splitEntryName,
  synthesizeSandbox,
  type InventoryEntry,
  type NodeInventory,
  type ServedSandbox,
} from '@sandbox-scale/scale-core';
import type { WatchEventType } from '../resource/events';
import type { WatchHub } from './watch-hub';
import type { Revisions } from './revisions';
import { SortedRows, type RowsSnapshot } from './sorted-rows';

/** One sandbox as the cache knows it: which node reports it, the entry, and when it last changed. */
export interface Row {
  readonly key: string;
  readonly node: string;
  readonly entry: InventoryEntry;
  readonly fingerprint: string;
  readonly rev: number;
  /** Fallback creationTimestamp when the entry has no claimedAt. */
  readonly seenAt: string;
  /** A sandbox created here and not yet published: the object the create answered. */
  readonly created?: ServedSandbox;
  /**
   * Its claim reference carries this control plane's MAC (or it was created here): only such a
   * row is acted on (exec, files, port-forward, the router, lifecycle verbs, delete), and an
   * unproven row never hides a proven one of the same name.
   */
  readonly proven: boolean;
}

interface NodeState {
  inv: NodeInventory;
  rows: Map<string, Row>;
  goneTimer?: NodeJS.Timeout;
}

/** One side of two entries giving the same name: which node reports it, and the entry. */
export type ShadowSide = Pick<Row, 'node' | 'entry'>;

export interface SandboxCacheOptions {
  /** How long a vanished inventory's entries are kept, so a brief gap is not DELETED+ADDED. */
  readonly graceMs: number;
  readonly hub: WatchHub;
  readonly revisions: Revisions;
  /** How long a created-but-unpublished sandbox, or a released one, is remembered. */
  readonly overlayTtlMs?: number;
  /** Whether a claim reference is one this control plane wrote (its MAC is right); default every one. */
  readonly proves?: (claimRef: string | undefined) => boolean;
  /** Told of an entry kept from a name because a proven one (of its node or another) holds it: it is not served. */
  readonly onShadowRefused?: (refused: ShadowSide, holder: ShadowSide) => void;
}

const keyOf = (e: InventoryEntry): string => {
  const { namespace, name } = splitEntryName(e.name);
  return `${namespace}/${name}`;
};

/**
 * The informer-fed cache of the fleet as sandboxes: NodeInventory objects in, one row per
 * sandbox out, with a namespace/name index (O(1) get) and a change event per row into the
 * watch hub. Also the local overlay:
 * sandboxes created moments ago (listed before their node publishes them) and sandboxes
 * released here (hidden before their node publishes the release).
 */
export class SandboxCache {
  /** By object name: a node's own NodeInventory and, for a node split into parts, `<node>.part-<n>`. */
  readonly #nodes = new Map<string, NodeState>();
  readonly #byName = new Map<string, Row>();
  readonly #released = new Map<string, number>();
  readonly #createdExpiry = new Map<string, NodeJS.Timeout>();
  /** The same rows in list order, so a page is a binary search instead of a sort. */
  readonly #sorted = new SortedRows();
  /** inventories() until a NodeInventory changes: frozen, so a node choice against it need not walk every node per create. */
  #inventories: readonly NodeInventory[] | undefined;

  /** Off during the initial sync: the first state is a snapshot, not a stream of changes. */
  live = false;

  /** What an inventory replaces the current view of its object with; node notices keep a newer view (notices/node-view.ts). */
  admit: (next: NodeInventory, current: NodeInventory | undefined) => NodeInventory = (next) => next;

  /** Adds what users set (labels, annotations) to a served object; set once storage is built. */
  decorate: (obj: ServedSandbox) => ServedSandbox = (obj) => obj;

  constructor(private readonly opts: SandboxCacheOptions) {}

  get size(): number {
    return this.#byName.size;
  }

  get(namespace: string, name: string): Row | undefined {
    return this.#byName.get(`${namespace}/${name}`);
  }

  rows(): IterableIterator<Row> {
    return this.#byName.values();
  }

  /** Every row in list order (namespace, then name); immutable, shared until the cache changes. */
  sortedRows(): RowsSnapshot {
    return this.#sorted.snapshot();
  }

  /** Whether sortedRows() would now return a different snapshot than last time. */
  get changedSinceSnapshot(): boolean {
    return this.#sorted.dirty;
  }

  /** The node's own object (address, pools, conditions), never one of its parts. */
  inventory(node: string): NodeInventory | undefined {
    const inv = this.#nodes.get(node)?.inv;
    return inv?.part === undefined ? inv : undefined;
  }

  /**
   * One per node (parts of a split inventory hold entries only). The same frozen array until an
   * inventory is added, changed or dropped, as an informer's list is: CapacityLedger chooses from a
   * list it has seen without walking it again.
   */
  inventories(): readonly NodeInventory[] {
    this.#inventories ??= Object.freeze([...this.#nodes.values()].map((n) => n.inv).filter((inv) => inv.part === undefined));
    return this.#inventories;
  }

  /**
   * Whether the row's claim reference is proven with the keys held now, not those of when the row
   * was made: a key that left the keyring since proves nothing any more. What acts on a sandbox
   * asks this; a row made here without a reference keeps its own word.
   */
  provenNow(row: Row): boolean {
    if (row.entry.claimRef === undefined) return row.proven;
    return this.opts.proves?.(row.entry.claimRef) ?? true;
  }

  /** The Sandbox a read serves for a row. */
  objectOf(row: Row): ServedSandbox {
    if (row.created !== undefined) return this.decorate(row.created);
    return this.decorate(
      synthesizeSandbox(row.node, row.entry, { resourceVersion: String(row.rev), fallbackCreationTimestamp: row.seenAt }),
    );
  }

  /** What users set on a sandbox changed: serve it under a new revision (a MODIFIED event). */
  touch(namespace: string, name: string): void {
    const row = this.#byName.get(`${namespace}/${name}`);
    if (row === undefined) return;
    const rev = this.opts.revisions.next();
    const next: Row = {
      ...row,
      rev,
      ...(row.created ? { created: { ...row.created, metadata: { ...row.created.metadata, resourceVersion: String(rev) } } } : {}),
    };
    const state = this.#nodes.get(row.node);
    if (state?.rows.get(row.key) === row) state.rows.set(row.key, next);
    this.#index(next);
  }

  /** A NodeInventory (a node's own object or one of its parts) was added or changed. */
  upsertInventory(incoming: NodeInventory): void {
    const object = incoming.metadata.name ?? incoming.node;
    const inv = this.admit(incoming, this.#nodes.get(object)?.inv);
    // rows name the node, which routing resolves; a part's rows belong to the node it is part of
    const node = inv.part === undefined ? object : inv.node;
    const state = this.#nodes.get(object) ?? { inv, rows: new Map<string, Row>() };
    if (state.goneTimer !== undefined) clearTimeout(state.goneTimer);
    delete state.goneTimer;
    state.inv = inv;
    this.#nodes.set(object, state);
    this.#inventories = undefined;
    // every change gets its own revision, so a watch resumed from any of them misses nothing
    let rev = 0;
    const nextRev = (): number =>
      (rev = rev === 0 ? this.opts.revisions.observe(inv.metadata.resourceVersion) : this.opts.revisions.next());
    const seenAt = inv.metadata.creationTimestamp ?? new Date().toISOString();
    const next = new Map<string, Row>();
    for (const entry of this.#oneEntryPerName(inv.entries ?? [], node)) {
      if (entry.id !== undefined && this.#released.has(entry.id)) continue;
      const key = keyOf(entry);
      const fingerprint = entryFingerprint(entry);
      const old = state.rows.get(key);
      if (old !== undefined && old.fingerprint === fingerprint && old.created === undefined) {
        next.set(key, old);
        continue;
      }
      const proven = this.opts.proves?.(entry.claimRef) ?? true;
      const row: Row = { key, node, entry, fingerprint, rev: nextRev(), seenAt: old?.seenAt ?? seenAt, proven };
      next.set(key, row);
      this.#index(row);
    }
    for (const [key, old] of state.rows) {
      if (next.has(key)) continue;
      // a sandbox created here is not in an inventory built before its claim: it stays until an
      // inventory reports it or its overlay expires, so a racing publish is no DELETED
      if (old.created !== undefined && this.#createdExpiry.has(key)) next.set(key, old);
      else this.#unindex(old, nextRev());
    }
    if (rev === 0) this.opts.revisions.advanceTo(inv.metadata.resourceVersion);
    state.rows = next;
    this.#forgetReleased(inv);
  }

  /**
   * The entries of one inventory, one per name: a node that reports a name twice keeps the entry
   * whose claim reference is proven (the first such, else the first), and the other is refused.
   * Only names reported twice are proven here; the rest as their rows are made.
   */
  #oneEntryPerName(entries: readonly InventoryEntry[], node: string): readonly InventoryEntry[] {
    const seen = new Set<string>();
    let twice: Set<string> | undefined;
    for (const e of entries) {
      const key = keyOf(e);
      if (seen.has(key)) (twice ??= new Set()).add(key);
      seen.add(key);
    }
    if (twice === undefined) return entries;
    const kept = new Map<string, { entry: InventoryEntry; proven: boolean }>();
    for (const entry of entries) {
      const key = keyOf(entry);
      if (!twice.has(key)) continue;
      const proven = this.opts.proves?.(entry.claimRef) ?? true;
      const held = kept.get(key);
      if (held === undefined) kept.set(key, { entry, proven });
      else if (proven && !held.proven) {
        this.opts.onShadowRefused?.({ node, entry: held.entry }, { node, entry });
        kept.set(key, { entry, proven });
      } else if (!proven && held.proven) this.opts.onShadowRefused?.({ node, entry }, { node, entry: held.entry });
    }
    return entries.filter((e) => !twice.has(keyOf(e)) || kept.get(keyOf(e))?.entry === e);
  }

  /** A NodeInventory (by object name) vanished: keep its rows for the grace period, then drop them. */
  removeInventory(object: string): void {
    const state = this.#nodes.get(object);
    if (state === undefined || state.goneTimer !== undefined) return;
    state.goneTimer = setTimeout(() => this.#dropNode(object), this.opts.graceMs);
    state.goneTimer.unref();
  }

  /** Records a sandbox created here, listed until its node publishes it. */
  addCreated(node: string, entry: InventoryEntry, object: ServedSandbox): Row {
    const key = keyOf(entry);
    const rev = this.opts.revisions.next();
    const created = { ...object, metadata: { ...object.metadata, resourceVersion: String(rev) } };
    const row: Row = {
      key,
      node,
      entry,
      fingerprint: '',
      rev,
      seenAt: created.metadata.creationTimestamp ?? new Date().toISOString(),
      created,
      // this replica wrote its claim reference
      proven: true,
    };
    const state = this.#nodes.get(node);
    state?.rows.set(key, row);
    this.#index(row);
    const timer = setTimeout(() => this.#expireCreated(row), this.opts.overlayTtlMs ?? 300_000);
    timer.unref();
    this.#createdExpiry.set(key, timer);
    return row;
  }

  /** Whether this claim id was released here and its node has not published the release yet. */
  isReleased(claimId: string): boolean {
    return this.#released.has(claimId);
  }

  /** Hides a released sandbox at once; its node's next publish confirms the release. */
  markReleased(namespace: string, name: string, claimId: string): void {
    if (claimId !== '') this.#released.set(claimId, Date.now());
    const row = this.#byName.get(`${namespace}/${name}`);
    if (row === undefined || (row.entry.id ?? '') !== claimId) return;
    this.#nodes.get(row.node)?.rows.delete(row.key);
    this.#unindex(row, this.opts.revisions.next());
  }

  stop(): void {
    for (const s of this.#nodes.values()) if (s.goneTimer !== undefined) clearTimeout(s.goneTimer);
    for (const t of this.#createdExpiry.values()) clearTimeout(t);
  }

  #emit(type: WatchEventType, row: Row, rev: number, prev?: Row): void {
    if (!this.live) return;
    const obj = this.objectOf(row);
    const object = rev === row.rev ? obj : { ...obj, metadata: { ...obj.metadata, resourceVersion: String(rev) } };
    this.opts.hub.emit(prev === undefined ? { type, rev, object } : { type, rev, object, prev: this.objectOf(prev) });
  }

  #index(row: Row): void {
    const cur = this.#byName.get(row.key);
    // a name two nodes report: the first keeps it, unless only the newcomer's claim reference is
    // proven (a node cannot take a tenant's name by publishing it first)
    if (cur !== undefined && cur.node !== row.node && cur.created === undefined) {
      if (cur.proven || !row.proven) {
        if (cur.proven && !row.proven) this.opts.onShadowRefused?.(row, cur);
        return;
      }
      this.opts.onShadowRefused?.(cur, row);
    }
    const t = this.#createdExpiry.get(row.key);
    if (t !== undefined && row.created === undefined) {
      clearTimeout(t);
      this.#createdExpiry.delete(row.key);
    }
    this.#byName.set(row.key, row);
    this.#sorted.set(row);
    if (cur === undefined) this.#emit('ADDED', row, row.rev);
    else this.#emit('MODIFIED', row, row.rev, cur);
  }

  #unindex(row: Row, rev: number): void {
    if (this.#byName.get(row.key) !== row) return;
    this.#byName.delete(row.key);
    this.#sorted.delete(row.key);
    this.#emit('DELETED', row, rev);
    // another node's row of the name takes its place, a proven one first
    let next: Row | undefined;
    for (const s of this.#nodes.values()) {
      const other = s.rows.get(row.key);
      if (other === undefined || other === row) continue;
      if (other.proven) {
        next = other;
        break;
      }
      next ??= other;
    }
    if (next !== undefined) {
      this.#byName.set(row.key, next);
      this.#sorted.set(next);
      this.#emit('ADDED', next, this.opts.revisions.next());
    }
  }

  #dropNode(node: string): void {
    const state = this.#nodes.get(node);
    if (state === undefined) return;
    this.#nodes.delete(node);
    this.#inventories = undefined;
    for (const row of state.rows.values()) this.#unindex(row, this.opts.revisions.next());
  }

  #expireCreated(created: Row): void {
    this.#createdExpiry.delete(created.key);
    // the row itself, or the same one served anew by touch()
    const row = this.#byName.get(created.key);
    if (row === undefined || row.created === undefined || row.entry.id !== created.entry.id) return;
    this.#nodes.get(row.node)?.rows.delete(row.key);
    this.#unindex(row, this.opts.revisions.next());
  }

  /** Released ids leave the hide-list once their node stops reporting them, or after the TTL. */
  #forgetReleased(inv: NodeInventory): void {
    if (this.#released.size === 0) return;
    const ids = new Set((inv.entries ?? []).map((e) => e.id));
    const cutoff = Date.now() - (this.opts.overlayTtlMs ?? 300_000);
    // one object of a split node does not hold all its entries: only the TTL applies there
    const whole = inv.part === undefined && (inv.parts ?? 1) === 1;
    for (const [id, at] of this.#released) if (at < cutoff || (whole && !ids.has(id))) this.#released.delete(id);
  }
}
