import { z } from 'zod';
import { InventoryEntrySchema } from './node-inventory';

/**
 * The node notice contract between inventory-publisher (sender) and sandbox-apiserver (receiver),
 * docs/adr/0007: where publishers tell each replica of a change on their node between publishes.
 * Not under /apis: kube-apiserver never proxies it, only a publisher calls it.
 */
export const NODE_NOTICE_PATH = '/internal/notices/v1/node';

/**
 * On a node's own NodeInventory: the sequence of the sandboxd read it was built from, in the same
 * sequence as the node's notices, so a replica can tell which of the two is newer.
 */
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

/** What a replica did with a notice: took it, had a newer view already, or holds a view too old for the delta. */
export type NoticeOutcome = 'applied' | 'ignored' | 'conflict';
