import { z } from 'zod';
import { EXTENSIONS_API_VERSION } from '../constants';
import { conditionsSchema, dateTime, int32, ObjectMetaSchema } from './meta';

/**
 * NodeInventory (extensions.agents.x-k8s.io/v1beta1): one cluster-scoped, spec-less report per
 * node, written by that node's publisher.
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

/**
 * The fields of an entry in the order a row holds them. A row is the JSON array of these values
 * (null for one absent, trailing nulls left out): kube-apiserver decodes, validates and converts
 * a list of objects field by field, which made a 2,500-sandbox NodeInventory cost it about five
 * times the CPU per write of the same entries as one string each.
 */
export const INVENTORY_ROW_FIELDS = ['name', 'id', 'phase', 'claimRef', 'addr', 'deadline', 'claimedAt'] as const;

/** The longest row one entry may take (names and references are at most a few hundred bytes each). */
export const INVENTORY_ROW_MAX_CHARS = 4096;

/** An entry as its row: what a publisher writes into `rows`. Fields other than INVENTORY_ROW_FIELDS are not carried. */
export function inventoryRow(e: InventoryEntry): string {
  const values: (string | null)[] = INVENTORY_ROW_FIELDS.map((f) => {
    const v: unknown = e[f];
    return typeof v === 'string' ? v : null;
  });
  while (values.length > 1 && values[values.length - 1] === null) values.pop();
  return JSON.stringify(values);
}

const ROW_SHAPE = `a JSON array of strings or nulls: [${INVENTORY_ROW_FIELDS.join(', ')}]`;

/** A row read back as the entry it holds; checked as an entry is, so a bad value names its field. */
export const InventoryRowSchema = z
  .string()
  .max(INVENTORY_ROW_MAX_CHARS)
  .describe(`One live sandbox on the node, as ${ROW_SHAPE}.`)
  .transform((row, ctx) => {
    let values: unknown;
    try {
      values = JSON.parse(row);
    } catch {
      values = undefined;
    }
    // positions past the fields known here are left alone: a field added at the end of a row
    // is read by this release as the row without it
    if (!Array.isArray(values) || values.length === 0) {
      ctx.addIssue({ code: 'custom', message: `must be ${ROW_SHAPE}` });
      return z.NEVER;
    }
    const entry: Record<string, unknown> = {};
    INVENTORY_ROW_FIELDS.forEach((field, i) => {
      const v: unknown = values[i];
      // null (or a short row) is an absent field; any other value is left for the entry's schema to refuse by name
      if (v !== null && v !== undefined) entry[field] = v;
    });
    return entry;
  })
  .pipe(InventoryEntrySchema);

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
    node: z.string().min(1).max(253).describe('Name of the node; equals metadata.name, or <node>.part-<part> for a part object.'),
    address: z.string().optional().describe("host:port of the node's sandboxd; empty means the node cannot be routed to."),
    part: int32()
      .min(1)
      .max(255)
      .optional()
      .describe(
        'Set on the extra objects of a node whose entries do not fit one object: which part this is (1..parts-1). A part carries entries only.',
      ),
    parts: int32()
      .min(1)
      .max(256)
      .optional()
      .describe("On the node's own object: how many objects hold its entries (this one and parts 1..parts-1); absent means 1."),
    entries: z.array(InventoryEntrySchema).optional().meta({
      'x-kubernetes-list-type': 'atomic',
      description: 'Live sandboxes on the node, one object each (as publishers before rows wrote them).',
    }),
    rows: z
      .array(InventoryRowSchema)
      .optional()
      .meta({
        'x-kubernetes-list-type': 'atomic',
        description: `Live sandboxes on the node, one row each: ${ROW_SHAPE}. What publishers write; readers see them as entries.`,
      }),
    pools: z
      .array(PoolCapacitySchema)
      .optional()
      .meta({ 'x-kubernetes-list-type': 'atomic', description: 'Warm capacity per pool key on the node.' }),
    conditions: conditionsSchema('Conditions of the report, e.g. Stale when sandboxd could not be read.').optional(),
  })
  .meta({
    description: "What one node holds: its live sandboxes and its warm capacity per pool. Written only by that node's publisher.",
    // a part's name (<node>.part-<part>) is checked by the readers' schema: CEL's cost budget
    // refuses a rule that concatenates strings on an object this large
    'x-kubernetes-validations': [
      {
        rule: 'has(self.part) || self.metadata.name == self.node',
        message: 'node must equal metadata.name',
        fieldPath: '.node',
        reason: 'FieldValueInvalid',
      },
    ],
  })
  .superRefine((inv, ctx) => {
    // The store enumerates by metadata.name and synthesizes by node; a mismatch breaks routing.
    const name = inv.metadata.name;
    const expected = inventoryObjectName(inv.node, inv.part);
    if (name !== undefined && name !== '' && name !== expected)
      ctx.addIssue({
        code: 'custom',
        path: ['node'],
        message: `must equal metadata.name "${name}"${inv.part === undefined ? '' : ` as ${inv.node}.part-${inv.part}`}`,
      });
  })
  // readers see one list: the rows a publisher wrote after any entries an older one left
  .transform(({ rows, ...inv }) => (rows === undefined ? inv : { ...inv, entries: [...(inv.entries ?? []), ...rows] }));

/**
 * The object a node's entries live in: `<node>` for the node's own object (part 0), which
 * alone carries the address, pools and conditions, and `<node>.part-<n>` for the extra objects
 * of a node whose entries do not fit one etcd request (see INVENTORY_OBJECT_MAX_BYTES).
 */
export function inventoryObjectName(node: string, part?: number): string {
  return part === undefined || part === 0 ? node : `${node}.part-${part}`;
}

/**
 * The most JSON one NodeInventory body may hold. etcd refuses a request over 1.5 MiB
 * (--max-request-bytes); the stored object adds metadata and managedFields to the body, so a
 * body is kept to 1 MiB and a node with more entries publishes them in several objects.
 */
export const INVENTORY_OBJECT_MAX_BYTES = 1024 * 1024;

export type NodeInventory = z.infer<typeof NodeInventorySchema>;
export type InventoryEntry = z.infer<typeof InventoryEntrySchema>;
export type PoolCapacity = z.infer<typeof PoolCapacitySchema>;
