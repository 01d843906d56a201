import { z } from 'zod';
import { FastClaimRequestSchema } from './fast-path-request';

/** The one path fast-path replicas call each other on; callers must be a replica (PeerIdentity). */
export const FAST_PATH_PEER_PATH = '/internal/peers/v1/call';

const TargetShape = { namespace: FastClaimRequestSchema.shape.namespace, name: z.string().min(1).max(253) };

/**
 * What one fast-path replica asks another (docs/security.md, "What bounds a namespace on the
 * fast path"):
 * - `claim`: a claim of a namespace the receiver serves. The sender authenticated and
 *   authorized the caller; the receiver takes the name, counts the cap and delivers, and hands
 *   the call on to no one.
 * - `reserve`: while the replicas' set has just changed, a replica that delivers in a namespace
 *   first takes the name and a place under the cap on every other replica, so a replica that
 *   has not seen the change yet (and still serves the namespace) cannot hand out the same name
 *   or pass the cap at the same time. `unreserve` undoes it when nothing was delivered.
 */
export const FastPathPeerCallSchema = z.discriminatedUnion('op', [
  z.strictObject({
    op: z.literal('claim'),
    username: z.string().min(1).max(1024),
    request: z.strictObject({
      namespace: FastClaimRequestSchema.shape.namespace,
      name: TargetShape.name,
      warmPool: FastClaimRequestSchema.shape.warmPool,
      ttlSeconds: FastClaimRequestSchema.shape.ttlSeconds,
    }),
  }),
  z.strictObject({ op: z.literal('reserve'), ...TargetShape }),
  z.strictObject({ op: z.literal('unreserve'), ...TargetShape }),
]);
export type FastPathPeerCall = z.infer<typeof FastPathPeerCallSchema>;
export type ForwardedClaim = Extract<FastPathPeerCall, { op: 'claim' }>;
