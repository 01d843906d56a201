import { z } from 'zod';
import { VolumeSchema } from './replies';

/**
 * Request bodies on the wire, shared by the client (what it encodes) and the simulator (what
 * it decodes). The daemon decodes leniently: unknown fields are ignored and a JSON `null`
 * leaves a field at its zero value, hence `nullish` everywhere. Only `PUT /v1/pools` is
 * strict. Encoders below drop zero-valued optional fields, as the daemon's clients do.
 */

const int = z.number().int();

export const ClaimBodySchema = z.object({
  template: z.string().nullish(),
  net: z.string().nullish(),
  size: z.string().nullish(),
  ttl_seconds: int.nullish(),
  claim_ref: z.string().nullish(),
  no_redirect: z.boolean().nullish(),
  require_promoted: z.boolean().nullish(),
  volumes: z.array(VolumeSchema).nullish(),
  volumes_attach_only: z.boolean().nullish(),
});
export type ClaimBody = z.input<typeof ClaimBodySchema>;

export const RenewBodySchema = z.object({ ttl_seconds: int.nullish() });
export type RenewBody = z.input<typeof RenewBodySchema>;

export const ForkBodySchema = z.object({
  token: z.string().nullish(),
  count: int.nullish(),
  ttl_seconds: int.nullish(),
  claim_ref_prefix: z.string().nullish(),
});
export type ForkBody = z.input<typeof ForkBodySchema>;

export const PromoteBodySchema = z.object({ token: z.string().nullish(), template: z.string().nullish() });
export type PromoteBody = z.input<typeof PromoteBodySchema>;

export const CheckpointBodySchema = z.object({ token: z.string().nullish(), name: z.string().nullish() });
export type CheckpointBody = z.input<typeof CheckpointBodySchema>;

export const CheckpointClaimBodySchema = z.object({
  ttl_seconds: int.nullish(),
  claim_ref: z.string().nullish(),
  no_redirect: z.boolean().nullish(),
});
export type CheckpointClaimBody = z.input<typeof CheckpointClaimBodySchema>;

/** One pool of `PUT /v1/pools`; strict, so a typo is a 400 instead of a silent default. */
export const PoolSpecBodySchema = z.strictObject({
  template: z.string(),
  net: z.string().optional(),
  size: z.string().optional(),
  warm: int.optional(),
  warm_max: int.optional(),
  idle_hibernate_seconds: int.optional(),
  archive_after_seconds: int.optional(),
  archive_delete_after_seconds: int.optional(),
});
export type PoolSpecBody = z.input<typeof PoolSpecBodySchema>;

export const PoolsBodySchema = z.strictObject({ pools: z.array(PoolSpecBodySchema).nullish() });
export type PoolsBody = z.input<typeof PoolsBodySchema>;

/** What a caller asks for; camelCase, optional fields left out mean "server default". */
export interface ClaimRequest {
  template: string;
  net?: string;
  size?: string;
  /** 0 or absent = the node's default (300 s); above 24 h the node clamps. */
  ttlSeconds?: number;
  /** Opaque reference kept on the claim; the apiserver uses `<namespace>/<name>`. */
  claimRef?: string;
  noRedirect?: boolean;
  requirePromoted?: boolean;
}

export interface ForkRequest {
  count: number;
  ttlSeconds?: number;
  claimRefPrefix?: string;
  /** The parent's sandbox token; leave out to act by id with the root token. */
  sandboxToken?: string;
}

export interface PromoteRequest {
  template: string;
  sandboxToken?: string;
}

export interface CheckpointRequest {
  name?: string;
  sandboxToken?: string;
}

export interface CheckpointClaimRequest {
  ttlSeconds?: number;
  claimRef?: string;
  noRedirect?: boolean;
}

export interface PoolSpec {
  template: string;
  net?: string;
  size?: string;
  /** The floor of the watermark; the API default is 0. */
  warm: number;
  /** 0 = static target; otherwise ≥ warm and enables the demand-adaptive target. */
  warmMax?: number;
  idleHibernateSeconds?: number;
  archiveAfterSeconds?: number;
  archiveDeleteAfterSeconds?: number;
}

export interface TemplateKey {
  template: string;
  net?: string;
  size?: string;
}

/** `body` with each of `fields` that is not a zero value (the server's default) added, in order. */
function withSet<T extends object>(body: T, fields: { [K in keyof T]?: T[K] | undefined | null | '' | 0 | false }): T {
  for (const [key, value] of Object.entries(fields))
    if (value !== undefined && value !== null && value !== '' && value !== 0 && value !== false)
      (body as Record<string, unknown>)[key] = value;
  return body;
}

export function encodeClaim(req: ClaimRequest): ClaimBody {
  return withSet<ClaimBody>(
    { template: req.template },
    {
      net: req.net,
      size: req.size,
      ttl_seconds: req.ttlSeconds,
      claim_ref: req.claimRef,
      no_redirect: req.noRedirect,
      require_promoted: req.requirePromoted,
    },
  );
}

export function encodeFork(req: ForkRequest): ForkBody {
  return withSet<ForkBody>(
    { count: req.count },
    { token: req.sandboxToken, ttl_seconds: req.ttlSeconds, claim_ref_prefix: req.claimRefPrefix },
  );
}

export function encodePromote(req: PromoteRequest): PromoteBody {
  return withSet<PromoteBody>({ template: req.template }, { token: req.sandboxToken });
}

export function encodeCheckpoint(req: CheckpointRequest): CheckpointBody {
  return withSet<CheckpointBody>({}, { token: req.sandboxToken, name: req.name });
}

export function encodeCheckpointClaim(req: CheckpointClaimRequest): CheckpointClaimBody {
  return withSet<CheckpointClaimBody>({}, { ttl_seconds: req.ttlSeconds, claim_ref: req.claimRef, no_redirect: req.noRedirect });
}

/** `warm` is always sent (0 is meaningful); the other zero values are the server's defaults. */
export function encodePools(pools: readonly PoolSpec[]): { pools: PoolSpecBody[] } {
  return {
    pools: pools.map((p) =>
      withSet<PoolSpecBody>(
        { template: p.template, warm: p.warm },
        {
          net: p.net,
          size: p.size,
          warm_max: p.warmMax,
          idle_hibernate_seconds: p.idleHibernateSeconds,
          archive_after_seconds: p.archiveAfterSeconds,
          archive_delete_after_seconds: p.archiveDeleteAfterSeconds,
        },
      ),
    ),
  };
}
