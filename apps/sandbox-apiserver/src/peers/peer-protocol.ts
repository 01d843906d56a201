import { InventoryEntrySchema } from '@sandbox-scale/scale-core';
import { z } from 'zod';

/** The one path peers call each other on. Never proxied by kube-apiserver (not under /apis). */
export const PEER_PATH = '/internal/peers/v1/call';

const NamespaceSchema = z.string().min(1).max(63);
const NameSchema = z.string().min(1).max(253);
/** A selector as long as a request line may carry one. */
const SELECTOR_MAX = 64 * 1024;
/** A continue token: a namespace/name and three counts, base64url. */
const CONTINUE_MAX = 2048;
/**
 * The most items a page served by a peer holds (servers may return fewer than `limit`, with a
 * continue token): a page of the largest objects still fits LIST_REPLY_MAX_BYTES.
 */
export const FORWARDED_PAGE_ITEMS = 5000;
/** The largest reply a peer's page may be. */
export const LIST_REPLY_MAX_BYTES = 64 * 1024 * 1024;

/**
 * A verb handed to the owner of a name. The caller has already authenticated and authorized
 * the end user; the owner runs the verb on its own storage and forwards nothing further.
 */
export const PeerCallSchema = z.discriminatedUnion('op', [
  z.object({ op: z.literal('create'), namespace: NamespaceSchema, body: z.unknown().optional(), dryRun: z.boolean() }),
  z.object({ op: z.literal('get'), namespace: NamespaceSchema, name: NameSchema }),
  z.object({ op: z.literal('delete'), namespace: NamespaceSchema, name: NameSchema, body: z.unknown().optional(), dryRun: z.boolean() }),
  z.object({
    op: z.literal('act'),
    namespace: NamespaceSchema,
    name: NameSchema,
    action: z.string().min(1).max(64),
    body: z.unknown().optional(),
    dryRun: z.boolean(),
  }),
  // notices (peers/overlay-share.ts): a sandbox a replica just created or released, so every
  // replica lists it (or stops) at once instead of at its node's next publish
  z.object({
    op: z.literal('listed'),
    namespace: NamespaceSchema,
    name: NameSchema,
    node: z.string().min(1).max(253),
    entry: InventoryEntrySchema,
  }),
  z.object({ op: z.literal('released'), namespace: NamespaceSchema, name: NameSchema, claimId: z.string().min(1).max(128) }),
  // the next page of a list this replica began (its continue token names one of its snapshots):
  // the replica that took the snapshot serves every page of it (peers/list-continuation.ts)
  z.object({
    op: z.literal('list'),
    // '' lists every namespace
    namespace: z.string().max(63),
    labelSelector: z.string().max(SELECTOR_MAX),
    fieldSelector: z.string().max(SELECTOR_MAX),
    limit: z.number().int().min(1).max(FORWARDED_PAGE_ITEMS),
    continue: z.string().min(1).max(CONTINUE_MAX),
  }),
]);
export type PeerCall = z.infer<typeof PeerCallSchema>;
export type PeerNotice = Extract<PeerCall, { op: 'listed' | 'released' }>;
export type PeerListCall = Extract<PeerCall, { op: 'list' }>;
