import {
  addressIPs,
  nameHash,
  servedObjectName,
  CONDITION_REASONS,
  CONDITION_TYPES,
  EXTENSIONS_API_VERSION,
  type Condition,
  type SandboxClaim,
} from '@sandbox-scale/scale-core';
import type { Assignment } from '../gateway/assignment';

export type ConditionInput = Pick<Condition, 'type' | 'status' | 'reason' | 'message'>;

/**
 * metav1 "set status condition" semantics: a condition keeps its lastTransitionTime unless its
 * status flips, so `kubectl describe` shows when the claim really changed state.
 */
export function setCondition(
  existing: readonly Condition[] | undefined,
  next: ConditionInput,
  now: Date,
  generation?: number,
): Condition[] {
  const out = (existing ?? []).filter((c) => c.type !== next.type);
  const prev = (existing ?? []).find((c) => c.type === next.type);
  const lastTransitionTime = prev && prev.status === next.status ? prev.lastTransitionTime : now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  out.push({ ...next, lastTransitionTime, ...(generation !== undefined ? { observedGeneration: generation } : {}) });
  return out.sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0));
}

const TOKEN_SECRET_SUFFIX = '-sandbox-token';
const MAX_NAME = 253;

/**
 * The name of the Secret holding a claim's sandbox token: `<claim>-sandbox-token`, or, when that
 * would pass 253 characters, the claim name cut short plus a hash of the whole name, so every
 * claim name (up to 253) gets a valid name of its own.
 */
export function tokenSecretName(claimName: string): string {
  const plain = `${claimName}${TOKEN_SECRET_SUFFIX}`;
  if (plain.length <= MAX_NAME) return plain;
  const hash = nameHash(claimName);
  // a DNS subdomain label must not end in '.' or '-' before the '-<hash>' we append
  const head = claimName.slice(0, MAX_NAME - TOKEN_SECRET_SUFFIX.length - hash.length - 1).replace(/[.-]+$/, '');
  return `${head}-${hash}${TOKEN_SECRET_SUFFIX}`;
}

/** The status of a Bound claim. podIPs carry the host only, as a Pod's do; the address keeps the port a caller dials. */
export function boundStatus(claim: SandboxClaim, a: Assignment, now: Date, withSecret: boolean): NonNullable<SandboxClaim['status']> {
  const name = claim.metadata.name ?? '';
  const ips = addressIPs(a.address) ?? [];
  // Ready follows Bound, so a Ready=False left by a wait before the bind (NamespaceNotEnabled, RecordFailed...) does not outlive it.
  const bound = {
    status: 'True' as const,
    reason: CONDITION_REASONS.nodeLocalClaim,
    message: `node ${a.node} handed over sandbox ${a.claimId}`,
  };
  const conditions = setCondition(
    setCondition(claim.status?.conditions, { type: CONDITION_TYPES.bound, ...bound }, now, claim.metadata.generation),
    { type: CONDITION_TYPES.ready, ...bound },
    now,
    claim.metadata.generation,
  );
  return {
    sandbox: {
      // upstream clients read the Sandbox named here; sandbox-apiserver serves a claim's sandbox under the claim's name
      name: servedObjectName(name),
      claimID: a.claimId,
      nodeName: a.node,
      ...(ips.length > 0 ? { podIPs: ips } : {}),
      ...(a.address ? { address: a.address } : {}),
      ...(a.deadline ? { deadline: a.deadline } : {}),
      ...(withSecret ? { tokenSecretName: tokenSecretName(name) } : {}),
    },
    conditions,
    ...(claim.metadata.generation !== undefined ? { observedGeneration: claim.metadata.generation } : {}),
  };
}

/** An SSA body for the status subresource of `claim`. */
export function statusApplyBody(claim: SandboxClaim, status: NonNullable<SandboxClaim['status']>) {
  return {
    apiVersion: EXTENSIONS_API_VERSION,
    kind: 'SandboxClaim',
    metadata: { name: claim.metadata.name ?? '', namespace: claim.metadata.namespace ?? '' },
    status,
  };
}

/**
 * The node's claim id of the claim's sandbox, '' when unbound. A status written before the id had
 * a field of its own held it in `name`; a claim name never holds `_`, a sandboxd id always does.
 */
export function boundClaimId(claim: SandboxClaim): string {
  const s = claim.status?.sandbox;
  if (s?.claimID) return s.claimID;
  return s?.name?.includes('_') ? s.name : '';
}

/**
 * Whether the claim's status records a sandbox (a claim id): Bound now, or bound once and since
 * finished (its Bound condition then says ClaimExpired or SandboxLost). Not the Bound condition.
 */
export function recordsSandbox(claim: SandboxClaim): boolean {
  return boundClaimId(claim) !== '';
}

export function boundConditionTrue(claim: SandboxClaim): boolean {
  return claim.status?.conditions?.some((c) => c.type === CONDITION_TYPES.bound && c.status === 'True') ?? false;
}
