import type { SandboxClaim } from '@sandbox-scale/scale-core';

/** A field of the claim that makes it unclaimable, named by its path (shown in the condition). */
export interface FieldProblem {
  field: string;
  message: string;
}

export type TtlOutcome = { ok: true; ttlSeconds: number } | { ok: false; problem: FieldProblem };

/**
 * The TTL a claim asks the node for: seconds until spec.lifecycle.shutdownTime, rounded up so
 * the VM never ends before the time the claim names; none means the node default. A time already past is invalid: a VM
 * claimed for it would be released at once.
 */
export function claimTtl(claim: SandboxClaim, now: Date): TtlOutcome {
  const shutdown = claim.spec.lifecycle?.shutdownTime;
  if (shutdown === undefined) return { ok: true, ttlSeconds: 0 };
  const ms = Date.parse(shutdown) - now.getTime();
  if (!Number.isFinite(ms))
    return { ok: false, problem: { field: 'spec.lifecycle.shutdownTime', message: `"${shutdown}" is not an RFC3339 time` } };
  if (ms <= 0) return { ok: false, problem: { field: 'spec.lifecycle.shutdownTime', message: `${shutdown} is not in the future` } };
  return { ok: true, ttlSeconds: Math.ceil(ms / 1000) };
}

/** Whether ns/name was created before `since` (its delivery may predate this process). */
export function createdBefore(claim: SandboxClaim, since: Date): boolean {
  const ts = claim.metadata.creationTimestamp;
  if (!ts) return true;
  return Date.parse(ts) <= since.getTime();
}
