import { INVENTORY_SEQ_ANNOTATION, type InventoryEntry, type NodeInventory, type NodeNotice } from '@sandbox-scale/scale-core';

/**
 * How far ahead of this server's clock a node's read sequence (its read time in milliseconds) may
 * be: clocks of nodes differ, but a sequence further ahead would hold the node's view still until
 * that time came, every later notice and publish looking older.
 */
export const MAX_SEQ_AHEAD_MS = 5 * 60_000;

/** Whether a read sequence is past what a node's clock can be now. */
export const seqAhead = (seq: number, now = Date.now()): boolean => seq > now + MAX_SEQ_AHEAD_MS;

/**
 * The publisher's read sequence of an inventory view; 0 when it carries none (an older publisher)
 * or one too far ahead of this clock, so the next notice or publish replaces the view.
 */
export function seqOf(inv: NodeInventory | undefined, now = Date.now()): number {
  const raw = inv?.metadata.annotations?.[INVENTORY_SEQ_ANNOTATION];
  const n = raw !== undefined && /^[0-9]{1,16}$/.test(raw) ? Number(raw) : 0;
  return Number.isSafeInteger(n) && !seqAhead(n, now) ? n : 0;
}

/** Only a node whose entries all sit in its own object takes notices; a split node is served from its publishes. */
function whole(inv: NodeInventory): boolean {
  return inv.part === undefined && (inv.parts ?? 1) === 1;
}

function withView(inv: NodeInventory, seq: number, entries: InventoryEntry[]): NodeInventory {
  const annotations = { ...inv.metadata.annotations, [INVENTORY_SEQ_ANNOTATION]: String(seq) };
  const next: NodeInventory = { ...inv, metadata: { ...inv.metadata, annotations } };
  if (entries.length > 0) next.entries = entries;
  else delete next.entries;
  return next;
}

const keyOf = (e: InventoryEntry): string => e.id ?? e.name;

const byNameThenId = (a: InventoryEntry, b: InventoryEntry): number =>
  a.name < b.name ? -1 : a.name > b.name ? 1 : (a.id ?? '') < (b.id ?? '') ? -1 : (a.id ?? '') > (b.id ?? '') ? 1 : 0;

export type NoticeMerge =
  /** The node's new view: apply it as its inventory. */
  | { readonly kind: 'applied'; readonly view: NodeInventory }
  /** Nothing to do: the view is as new already, the node is unknown here, or it is split into parts. */
  | { readonly kind: 'ignored'; readonly reason: string }
  /** The delta's base is newer than the view held here: the sender sends the whole set instead. */
  | { readonly kind: 'conflict'; readonly viewSeq: number };

/**
 * A notice over the node's current view (pure). A view moves only forward in the node's read
 * sequence: a notice no newer than the view is ignored, so a late or replayed one never brings
 * back an older state. A delta applies over any view at or after its base (the node's entries did
 * not change between its base and its read); over an older one it is a conflict.
 */
export function mergeNotice(current: NodeInventory | undefined, notice: NodeNotice): NoticeMerge {
  if (current === undefined) return { kind: 'ignored', reason: 'no NodeInventory of this node is served here' };
  if (!whole(current)) return { kind: 'ignored', reason: 'the node is published in several objects' };
  const viewSeq = seqOf(current);
  if (notice.seq <= viewSeq) return { kind: 'ignored', reason: 'the view held here is as new' };
  if (notice.base === undefined) return { kind: 'applied', view: withView(current, notice.seq, [...notice.entries].sort(byNameThenId)) };
  if (viewSeq < notice.base || viewSeq === 0) return { kind: 'conflict', viewSeq };
  const entries = new Map((current.entries ?? []).map((e) => [keyOf(e), e]));
  for (const id of notice.removed ?? []) entries.delete(id);
  for (const e of notice.entries) entries.set(keyOf(e), e);
  return { kind: 'applied', view: withView(current, notice.seq, [...entries.values()].sort(byNameThenId)) };
}

/**
 * What a NodeInventory from the informer replaces the current view with (pure). A publish
 * supersedes a notice once it is as new; an older one (its write raced a later notice) brings its
 * pools and conditions but keeps the notice's entries, which its next publish confirms. An
 * inventory without a sequence (an older publisher) always supersedes.
 */
export function supersede(next: NodeInventory, current: NodeInventory | undefined): NodeInventory {
  if (current === undefined || !whole(next) || !whole(current)) return next;
  const nextSeq = seqOf(next);
  const viewSeq = seqOf(current);
  if (nextSeq === 0 || nextSeq >= viewSeq) return next;
  return withView(next, viewSeq, current.entries ?? []);
}
