import {
  fnv1a32,
  INVENTORY_OBJECT_MAX_BYTES,
  INVENTORY_ROW_MAX_CHARS,
  inventoryObjectName,
  inventoryRow,
  type InventoryEntry,
} from '@sandbox-scale/scale-core';
import type { InventoryBody } from './build-inventory';

/**
 * A body as it is written: its entries as rows (one string each), which kube-apiserver decodes,
 * validates and stores at about a fifth of the CPU of the same entries as objects. Readers parse
 * rows back into entries (NodeInventorySchema); an apply without `entries` removes any an earlier
 * publisher wrote. A row longer than the CRD takes (INVENTORY_ROW_MAX_CHARS: a node reporting an
 * id or claim reference of kilobytes) is left out, so one such sandbox never stops the node's
 * publish; see oversizedEntries.
 */
export function storedBody(body: InventoryBody): InventoryBody {
  const { entries, ...rest } = body;
  if (entries === undefined) return rest;
  return { ...rest, rows: entries.map(inventoryRow).filter((row) => row.length <= INVENTORY_ROW_MAX_CHARS) };
}

/** The entries of `body` that storedBody leaves out, their row being longer than the CRD takes. */
export function oversizedEntries(body: InventoryBody): InventoryEntry[] {
  return (body.entries ?? []).filter((e) => inventoryRow(e).length > INVENTORY_ROW_MAX_CHARS);
}

/** Bytes of a body as the API server receives it. */
export function bodyBytes(body: InventoryBody): number {
  return Buffer.byteLength(JSON.stringify(storedBody(body)));
}

/** Most parts a node is split into; past it the node's report is refused rather than written. */
export const MAX_INVENTORY_PARTS = 256;

export class InventoryTooLargeError extends Error {
  override readonly name = 'InventoryTooLargeError';
}

export function isInventoryTooLarge(err: unknown): err is InventoryTooLargeError {
  return err instanceof InventoryTooLargeError;
}

/**
 * A node's inventory as the objects to write: the body itself when it fits `maxBytes`, else
 * the node's own object (address, pools, conditions, `parts`) plus `<node>.part-<n>` objects,
 * each holding the entries whose name hashes to it. The part count is a power of two, so when
 * it grows each part splits in two and an entry only ever moves to a part written before the
 * one it leaves (see InventoryPublisher's write order). Entries keep their sorted order.
 */
export function splitInventory(body: InventoryBody, maxBytes: number = INVENTORY_OBJECT_MAX_BYTES): InventoryBody[] {
  const whole = bodyBytes(body);
  if (whole <= maxBytes) return [body];
  const entries = body.entries ?? [];
  const hashes = entries.map((e) => fnv1a32(e.name));
  for (let parts = nextPowerOfTwo(Math.ceil(whole / maxBytes)); parts <= MAX_INVENTORY_PARTS; parts *= 2) {
    const shards: InventoryEntry[][] = Array.from({ length: parts }, () => []);
    entries.forEach((e, i) => shards[(hashes[i] ?? 0) % parts]?.push(e));
    const objects = shards.map((shard, part) => partBody(body, part, parts, shard));
    if (objects.every((o) => bodyBytes(o) <= maxBytes)) return objects;
  }
  throw new InventoryTooLargeError(
    `the inventory of node ${body.node} (${whole} bytes, ${entries.length} entries) does not fit ${MAX_INVENTORY_PARTS} objects of ${maxBytes} bytes`,
  );
}

function partBody(body: InventoryBody, part: number, parts: number, entries: InventoryEntry[]): InventoryBody {
  if (part === 0) {
    const { entries: _all, ...rest } = body;
    return { ...rest, parts, ...(entries.length > 0 ? { entries } : {}) };
  }
  // a part has no address, so every reader that picks nodes to route to passes over it
  return {
    apiVersion: body.apiVersion,
    kind: body.kind,
    metadata: { ...body.metadata, name: inventoryObjectName(body.node, part) },
    node: body.node,
    part,
    ...(entries.length > 0 ? { entries } : {}),
  };
}

function nextPowerOfTwo(n: number): number {
  let p = 1;
  while (p < n) p *= 2;
  return p;
}
