import { InventoryEntrySchema } from '@sandbox-scale/scale-core';
import { z } from 'zod';

/**
 * Where inventory-publishers tell this replica of a change on their node between publishes
 * (docs/adr/0007). Not under /apis: kube-apiserver never proxies it, only a publisher calls it.
 */
export const NODE_NOTICE_PATH = '/internal/notices/v1/node';

/** On a node's own NodeInventory: the publisher's read sequence it was built from (same sequence as its notices). */
export const INVENTORY_SEQ_ANNOTATION = 'sandbox.cocoonstack.io/inventory-seq';

/** Largest notice body: a whole set fits one NodeInventory object (1.5 MiB), with room for JSON spacing. */
export const MAX_NOTICE_BYTES = 2 * 1024 * 1024;

/** The most entries one notice may carry (a node's whole set is bounded by its object size). */
const MAX_ENTRIES = 20_000;

/**
 * A node's change, as its inventory-publisher sends it. `seq` is the node's read sequence
 * (milliseconds, strictly increasing per node). With `base`, `entries` are the entries added or
 * changed and `removed` the ids gone since the node's previous change, at read `base`; without
 * it, `entries` is the node's whole set.
 */
export const NodeNoticeSchema = z.strictObject({
  node: z.string().min(1).max(253),
  seq: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
  base: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER).optional(),
  entries: z.array(InventoryEntrySchema).max(MAX_ENTRIES),
  removed: z.array(z.string().min(1).max(253)).max(MAX_ENTRIES).optional(),
});
export type NodeNotice = z.infer<typeof NodeNoticeSchema>;
