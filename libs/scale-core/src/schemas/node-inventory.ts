import { z } from 'zod';
import { EXTENSIONS_API_VERSION } from '../constants';
import { conditionsSchema, dateTime, int32, ObjectMetaSchema } from './meta';

/**
 * NodeInventory (extensions.agents.x-k8s.io/v1beta1): one cluster-scoped, spec-less report per
 * node, written by that node's publisher (scale-contracts §3.1, k8s-api.md §2.5).
 * `claimedAt` and `conditions` are additions to the reference: the first gives synthesized
 * Sandboxes a stable creationTimestamp, the second lets the publisher say the report is stale.
 */

export const InventoryEntrySchema = z
  .looseObject({
    name: z.string().min(1).describe('<namespace>/<name> of the sandbox; a name without / is in namespace default.'),
    id: z.string().optional().describe('sandboxd claim id (sb_...); release and lifecycle verbs act on it, never on the name.'),
    phase: z.string().describe('Phase reported by the node, e.g. Running; Running and Ready (any case) mean Ready=True. May be empty.'),
    claimRef: z.string().optional().describe('<namespace>/<name> of the claim the sandbox was delivered for.'),
    addr: z.string().optional().describe('host:port of the sandbox; its host becomes status.podIPs[0].'),
    deadline: dateTime().optional().describe('Node-granted lease expiry (RFC3339).'),
    claimedAt: dateTime().optional().describe('When the node first granted the sandbox (RFC3339); the synthesized creationTimestamp.'),
  })
  .describe('One live sandbox on the node.');

export const PoolCapacitySchema = z
  .looseObject({
    template: z.string().min(1).describe('Template axis of the pool key: an image reference or a promoted template name.'),
    net: z.string().optional().describe('Network lane: none (default when empty) or egress.'),
    size: z.string().optional().describe('Size class: small (default when empty), medium or large.'),
    warm: int32().min(0).describe('Warm sandboxes ready to be claimed now.'),
    target: int32().min(0).describe('Desired warm depth on this node.'),
  })
  .describe('Warm capacity of one pool on the node.');

export const NodeInventorySchema = z
  .looseObject({
    apiVersion: z.literal(EXTENSIONS_API_VERSION),
    kind: z.literal('NodeInventory'),
    metadata: ObjectMetaSchema,
    node: z.string().min(1).describe('Name of the node; equals metadata.name.'),
    address: z.string().optional().describe('host:port of the node\'s sandboxd; empty means the node cannot be routed to.'),
    entries: z.array(InventoryEntrySchema).optional().meta({ 'x-kubernetes-list-type': 'atomic', description: 'Live sandboxes on the node.' }),
    pools: z.array(PoolCapacitySchema).optional().meta({ 'x-kubernetes-list-type': 'atomic', description: 'Warm capacity per pool key on the node.' }),
    conditions: conditionsSchema('Conditions of the report, e.g. Stale when sandboxd could not be read.').optional(),
  })
  .meta({
    description: 'What one node holds: its live sandboxes and its warm capacity per pool. Written only by that node\'s publisher.',
    'x-kubernetes-validations': [{ rule: 'self.metadata.name == self.node', message: 'node must equal metadata.name', fieldPath: '.node', reason: 'FieldValueInvalid' }],
  })
  .superRefine((inv, ctx) => {
    // The store enumerates by metadata.name and synthesizes by node; a mismatch breaks routing.
    const name = inv.metadata.name;
    if (name !== undefined && name !== '' && name !== inv.node) ctx.addIssue({ code: 'custom', path: ['node'], message: `must equal metadata.name "${name}"` });
  });

export type NodeInventory = z.infer<typeof NodeInventorySchema>;
export type InventoryEntry = z.infer<typeof InventoryEntrySchema>;
export type PoolCapacity = z.infer<typeof PoolCapacitySchema>;
