import { z } from 'zod';

/**
 * What a node handed over for one claim (its POST /v1/claim reply). `claimId` is the sandboxd
 * claim id (sb_...), never a Kubernetes name. The token authorizes the caller on the sandbox:
 * it goes to the caller and into the claim's Secret, never into status, events or logs. The
 * schema reads it back from the fast-path replica that served a forwarded claim.
 */
export const AssignmentSchema = z.strictObject({
  claimId: z.string().min(1),
  node: z.string().min(1),
  /** host:port of the sandbox (sandboxd owner_addr). */
  address: z.string().min(1),
  token: z.string().min(1),
  /** Node-granted expiry, RFC3339; authoritative over the requested TTL. */
  deadline: z.string().optional(),
});
export type Assignment = z.infer<typeof AssignmentSchema>;

/** The SandboxClaim a delivery belongs to. */
export interface ClaimTarget {
  namespace: string;
  name: string;
  /** When set, only the claim with this metadata.uid is written (not another of the same name). */
  uid?: string;
}
