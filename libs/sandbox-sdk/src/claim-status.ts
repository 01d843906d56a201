import { CONDITION_TYPES, servedObjectName } from '@sandbox-scale/scale-core';
import { z } from 'zod';

/**
 * What the SDK reads of a SandboxClaim. Loose on purpose: the status is owned by
 * claim-controller and grows over time (a node claim id of its own, a served-name
 * `status.sandbox.name`, a Ready condition), and a client must keep working across versions.
 */
const ConditionSchema = z.looseObject({
  type: z.string(),
  status: z.string(),
  reason: z.string().optional(),
  message: z.string().optional(),
});
export const ClaimObjectSchema = z.looseObject({
  metadata: z.looseObject({
    name: z.string(),
    namespace: z.string().optional(),
    uid: z.string().optional(),
    resourceVersion: z.string().optional(),
    labels: z.record(z.string(), z.string()).optional(),
    annotations: z.record(z.string(), z.string()).optional(),
    creationTimestamp: z.string().optional(),
    deletionTimestamp: z.string().optional(),
  }),
  spec: z
    .looseObject({
      warmPoolRef: z.looseObject({ name: z.string() }).optional(),
      lifecycle: z.looseObject({ shutdownTime: z.string().optional() }).optional(),
    })
    .optional(),
  status: z
    .looseObject({
      sandbox: z
        .looseObject({
          name: z.string().optional(),
          claimId: z.string().optional(),
          sandboxID: z.string().optional(),
          id: z.string().optional(),
          nodeName: z.string().optional(),
          node: z.string().optional(),
          address: z.string().optional(),
          podIPs: z.array(z.string()).optional(),
          tokenSecretName: z.string().optional(),
          deadline: z.string().optional(),
        })
        .optional(),
      conditions: z.array(ConditionSchema).optional(),
    })
    .optional(),
});
export type ClaimObject = z.infer<typeof ClaimObjectSchema>;
export type ClaimCondition = z.infer<typeof ConditionSchema>;

/** A node-local claim id as sandboxd mints them (`sb_…`); object names never hold `_`. */
const NODE_ID = /_/;

/** Where a bound claim's sandbox is, read tolerantly from either status layout. */
export interface BoundSandbox {
  /** The served Sandbox's name (`kubectl get sandbox NAME`): what the lifecycle verbs address. */
  name: string;
  /** The node-local claim id, when the status carries one. */
  claimId: string | undefined;
  node: string;
  address: string;
  tokenSecretName: string | undefined;
  deadline: string | undefined;
}

/**
 * The served Sandbox name: `status.sandbox.name` when it is an object name; while that field
 * still holds the node's id, the Sandbox is served under the claim's own name (its claim_ref).
 */
export function boundSandboxOf(claim: ClaimObject): BoundSandbox | undefined {
  const s = claim.status?.sandbox;
  if (!s?.name && !s?.claimId && !s?.sandboxID && !s?.id) return undefined;
  const statusName = s.name ?? '';
  const nameIsNodeId = NODE_ID.test(statusName);
  const claimId = s.claimId ?? s.sandboxID ?? s.id ?? (nameIsNodeId ? statusName : undefined);
  return {
    name: statusName && !nameIsNodeId ? statusName : servedObjectName(claim.metadata.name),
    claimId,
    node: s.nodeName ?? s.node ?? '',
    address: s.address ?? s.podIPs?.[0] ?? '',
    tokenSecretName: s.tokenSecretName,
    deadline: s.deadline,
  };
}

export function conditionOf(claim: ClaimObject, type: string): ClaimCondition | undefined {
  return claim.status?.conditions?.find((c) => c.type === type);
}

/** Reasons a claim never recovers from by waiting: the pool or template is missing, or it expired. */
const TERMINAL_REASONS = new Set([
  'WarmPoolNotFound',
  'TemplateNotFound',
  'InvalidMetadata',
  'ClaimExpired',
  'SandboxExpired',
  'EnvVarsInjectionRejected',
  'VolumeClaimTemplatesError',
]);

export type ClaimPhase =
  | { state: 'ready'; sandbox: BoundSandbox }
  | { state: 'pending'; reason: string; message: string }
  | { state: 'failed'; reason: string; message: string };

/**
 * Ready when present (it follows the sandbox), else Bound (older controllers set only that);
 * either one True with a sandbox in status means usable. A terminal Ready=False reason fails.
 */
export function claimPhase(claim: ClaimObject): ClaimPhase {
  const ready = conditionOf(claim, CONDITION_TYPES.ready);
  const bound = conditionOf(claim, CONDITION_TYPES.bound);
  const decisive = ready ?? bound;
  const sandbox = boundSandboxOf(claim);
  if (decisive?.status === 'True' && sandbox) return { state: 'ready', sandbox };
  const reason = decisive?.reason ?? 'Pending';
  const message = decisive?.message ?? 'waiting for claim-controller to bind a sandbox';
  if (decisive?.status === 'False' && TERMINAL_REASONS.has(reason)) return { state: 'failed', reason, message };
  return { state: 'pending', reason, message };
}
