import { z } from 'zod';

/**
 * Zod schemas of every sandboxd reply. The input side is the wire (snake_case, what the
 * daemon and the simulator write); the output side is what the client returns (camelCase,
 * deadlines as Date). Unknown fields are ignored, `null` lists read as `[]`, and a zero
 * time (`0001-01-01T00:00:00Z`) means "no deadline" and becomes `null`.
 */

/** Go's zero `time.Time`, which a listing renders for "no deadline". */
const ZERO_TIME_MS = Date.parse('0001-01-01T00:00:00Z');

/** An RFC 3339 time; the Go zero time maps to null. */
export const WireTimeSchema = z.string().transform((s, ctx): Date | null => {
  const ms = Date.parse(s);
  if (Number.isNaN(ms)) {
    ctx.addIssue({ code: 'custom', message: `not an RFC 3339 time: ${JSON.stringify(s)}` });
    return z.NEVER;
  }
  return ms <= ZERO_TIME_MS ? null : new Date(ms);
});

function list<T extends z.ZodType>(item: T) {
  return z
    .array(item)
    .nullish()
    .transform((v): z.output<T>[] => v ?? []);
}

/** `{template, net, size}`; older builds may add `engine` and leave out defaulted axes. */
export const PoolKeySchema = z.object({
  template: z.string(),
  net: z.string().optional().default('none'),
  size: z.string().optional().default('small'),
  engine: z.string().optional(),
});
export type PoolKey = z.output<typeof PoolKeySchema>;
export type WirePoolKey = z.input<typeof PoolKeySchema>;

export const VolumeSchema = z.object({
  name: z.string(),
  mount: z.string().optional(),
  mode: z.string().optional(),
});
export type Volume = z.output<typeof VolumeSchema>;

export const ClaimReplySchema = z
  .object({
    id: z.string().min(1),
    token: z.string(),
    deadline: WireTimeSchema,
    owner_addr: z.string().optional().default(''),
    template_digest: z.string().optional(),
    from_checkpoint: z.string().optional(),
    volumes: z.array(VolumeSchema).nullish(),
  })
  .transform((r) => ({
    id: r.id,
    token: r.token,
    deadline: r.deadline,
    ownerAddr: r.owner_addr,
    ...(r.template_digest ? { templateDigest: r.template_digest } : {}),
    ...(r.from_checkpoint ? { fromCheckpoint: r.from_checkpoint } : {}),
    ...(r.volumes?.length ? { volumes: r.volumes } : {}),
  }));
export type ClaimReply = z.output<typeof ClaimReplySchema>;
export type WireClaimReply = z.input<typeof ClaimReplySchema>;

/** A 200 that carries no `id`: "try a peer". An empty body decodes to no candidates. */
export const RedirectReplySchema = z
  .object({
    redirect: list(z.string()),
    require_promoted: z.boolean().optional().default(false),
  })
  .transform((r) => ({ redirect: r.redirect, requirePromoted: r.require_promoted }));
export type RedirectReply = z.output<typeof RedirectReplySchema>;
export type WireRedirectReply = z.input<typeof RedirectReplySchema>;

export const RenewReplySchema = z.object({ deadline: WireTimeSchema });
export type RenewReply = z.output<typeof RenewReplySchema>;
export type WireRenewReply = z.input<typeof RenewReplySchema>;

export const ForkReplySchema = z.object({ children: list(ClaimReplySchema) });
export type WireForkReply = z.input<typeof ForkReplySchema>;

export const PromoteReplySchema = z
  .object({ key: PoolKeySchema, content_digest: z.string().optional() })
  .transform((r) => ({ key: r.key, ...(r.content_digest ? { contentDigest: r.content_digest } : {}) }));
export type PromoteReply = z.output<typeof PromoteReplySchema>;
export type WirePromoteReply = z.input<typeof PromoteReplySchema>;

export const CheckpointSchema = z
  .object({
    id: z.string().min(1),
    name: z.string().optional(),
    sandbox_id: z.string(),
    key: PoolKeySchema,
    tenant: z.string().optional(),
    created_at: WireTimeSchema,
  })
  .transform((c) => ({
    id: c.id,
    ...(c.name ? { name: c.name } : {}),
    sandboxId: c.sandbox_id,
    key: c.key,
    ...(c.tenant ? { tenant: c.tenant } : {}),
    createdAt: c.created_at,
  }));
export type Checkpoint = z.output<typeof CheckpointSchema>;
export type WireCheckpoint = z.input<typeof CheckpointSchema>;

export const CheckpointReplySchema = z.object({ checkpoint: CheckpointSchema });
export type WireCheckpointReply = z.input<typeof CheckpointReplySchema>;
export const CheckpointsReplySchema = z.object({ checkpoints: list(CheckpointSchema) });
export type WireCheckpointsReply = z.input<typeof CheckpointsReplySchema>;

const sandboxRowShape = {
  id: z.string().min(1),
  key: PoolKeySchema,
  deadline: WireTimeSchema,
  claimed_at: WireTimeSchema.optional(),
  hibernated: z.boolean().optional().default(false),
  archived: z.boolean().optional().default(false),
  from_checkpoint: z.string().optional(),
  claim_ref: z.string().optional(),
  volumes: z.array(VolumeSchema).nullish(),
};

type RowWire = z.output<z.ZodObject<typeof sandboxRowShape>>;

function toRow(r: RowWire) {
  return {
    id: r.id,
    key: r.key,
    deadline: r.deadline,
    ...(r.claimed_at ? { claimedAt: r.claimed_at } : {}),
    hibernated: r.hibernated,
    archived: r.archived,
    ...(r.from_checkpoint ? { fromCheckpoint: r.from_checkpoint } : {}),
    ...(r.claim_ref ? { claimRef: r.claim_ref } : {}),
    ...(r.volumes?.length ? { volumes: r.volumes } : {}),
  };
}

/** One row of `GET /v1/sandboxes`: a live claim (never a warm VM, never a token). */
export const SandboxRowSchema = z.object(sandboxRowShape).transform(toRow);
export type SandboxRow = z.output<typeof SandboxRowSchema>;
export type WireSandboxRow = z.input<typeof SandboxRowSchema>;

/** `GET /v1/sandboxes/{id}`: the row plus the sandbox token when the node has an api_token. */
export const SandboxDetailSchema = z
  .object({ ...sandboxRowShape, token: z.string().optional() })
  .transform((r) => ({ ...toRow(r), ...(r.token ? { token: r.token } : {}) }));
export type SandboxDetail = z.output<typeof SandboxDetailSchema>;
export type WireSandboxDetail = z.input<typeof SandboxDetailSchema>;

export const SandboxesReplySchema = z.object({ sandboxes: list(SandboxRowSchema) });
export type WireSandboxesReply = z.input<typeof SandboxesReplySchema>;

export const StatsSchema = z
  .object({
    id: z.string(),
    cpu_count: z.number().int(),
    mem_total_bytes: z.number().int(),
    mem_used_bytes: z.number().int(),
    mem_used_measured: z.boolean().optional().default(false),
    hibernated: z.boolean().optional().default(false),
    measured_at: WireTimeSchema,
  })
  .transform((s) => ({
    id: s.id,
    cpuCount: s.cpu_count,
    memTotalBytes: s.mem_total_bytes,
    memUsedBytes: s.mem_used_bytes,
    memUsedMeasured: s.mem_used_measured,
    hibernated: s.hibernated,
    measuredAt: s.measured_at,
  }));
export type Stats = z.output<typeof StatsSchema>;
export type WireStats = z.input<typeof StatsSchema>;

export const OwnerReplySchema = z.object({ owner_addr: z.string() }).transform((r) => ({ ownerAddr: r.owner_addr }));
export type WireOwnerReply = z.input<typeof OwnerReplySchema>;

export const PeersReplySchema = z.object({ peers: list(z.string()) });
export type WirePeersReply = z.input<typeof PeersReplySchema>;

export const PoolStatusSchema = z.object({
  key: PoolKeySchema,
  warm: z.number().int(),
  refilling: z.number().int().optional().default(0),
  target: z.number().int(),
  golden: z.boolean().optional().default(false),
});
export type PoolStatus = z.output<typeof PoolStatusSchema>;

export const NodeInfoSchema = z
  .object({
    pools: list(PoolStatusSchema),
    claimed: z.number().int(),
    hibernated: z.number().int().optional().default(0),
    archived: z.number().int().optional().default(0),
    draining: z.boolean().optional().default(false),
    at_capacity: z.boolean().optional().default(false),
    at_capacity_reason: z.string().optional(),
    peers: list(z.string()),
  })
  .transform((i) => ({
    pools: i.pools,
    claimed: i.claimed,
    hibernated: i.hibernated,
    archived: i.archived,
    draining: i.draining,
    atCapacity: i.at_capacity,
    ...(i.at_capacity_reason ? { atCapacityReason: i.at_capacity_reason } : {}),
    peers: i.peers,
  }));
export type NodeInfo = z.output<typeof NodeInfoSchema>;
export type WireNodeInfo = z.input<typeof NodeInfoSchema>;

/** Every error body: `{"error": "<message>"}`. */
export const ErrorBodySchema = z.object({ error: z.string() });
export type WireErrorBody = z.input<typeof ErrorBodySchema>;
