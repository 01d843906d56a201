import { CONDITION_TYPES, leaseRenewAtMs, renewalFraction, type Rng, type SandboxClaim } from '@sandbox-scale/scale-core';
import { boundClaimId } from '../record/claim-status';

/**
 * The node lease of a Bound claim as this process last saw it granted. Kept in memory only:
 * renewing writes nothing to the API server (a status write per renewal would cost one etcd write
 * per claim per lease period). After a restart or failover the lease is rebuilt from the claim's
 * status (the deadline granted at bind), which can only be earlier than the real one, so the new
 * leader renews early rather than late.
 */
export interface NodeLease {
  /** The sandbox the lease belongs to; a claim bound anew (same name) starts a new lease. */
  claimId: string;
  deadlineMs: number;
  /** When to renew: a point between four and six tenths of the lease, spread per claim. */
  renewAtMs: number;
}

export type LeaseStep =
  /** spec.lifecycle.shutdownTime has come: release the sandbox. */
  | { kind: 'expire'; at: Date }
  /** Renew the node lease now for this many seconds (0 = the node's default). */
  | { kind: 'renew'; ttlSeconds: number }
  /** Nothing to do for this long. */
  | { kind: 'wait'; ms: number }
  /** No deadline anywhere (the node granted none and the claim sets none). */
  | { kind: 'none' };

export interface LeaseStepOptions {
  /** Seconds asked for on renewal of a claim without shutdownTime; 0 = the node's default lease. */
  leaseTtlSeconds: number;
  rng?: Rng;
}

/** The renewal point of a lease granted at `grantedAtMs` (the shared rule, drawn afresh). */
export function renewAtMs(grantedAtMs: number, deadlineMs: number, rng: Rng = Math.random): number {
  return leaseRenewAtMs(grantedAtMs, deadlineMs, renewalFraction(rng));
}

export function parseTime(at: string | undefined): number | undefined {
  if (at === undefined) return undefined;
  const ms = Date.parse(at);
  return Number.isFinite(ms) ? ms : undefined;
}

/**
 * The lease of a Bound claim: the one this process renewed last, else the one recorded at bind
 * (granted when the Bound condition turned True; the renewal point is drawn afresh).
 */
export function currentLease(claim: SandboxClaim, known: NodeLease | undefined, rng: Rng = Math.random): NodeLease | undefined {
  const claimId = boundClaimId(claim);
  if (known && known.claimId === claimId) return known;
  const deadlineMs = parseTime(claim.status?.sandbox?.deadline);
  if (deadlineMs === undefined) return undefined;
  const bound = claim.status?.conditions?.find((c) => c.type === CONDITION_TYPES.bound && c.status === 'True');
  const grantedAtMs = Math.min(parseTime(bound?.lastTransitionTime) ?? deadlineMs, deadlineMs);
  return { claimId, deadlineMs, renewAtMs: renewAtMs(grantedAtMs, deadlineMs, rng) };
}

/**
 * What a Bound claim needs next. A claim lives until it is deleted or until its
 * spec.lifecycle.shutdownTime; the node's lease is only a safety net for a control plane that
 * went away, so it is renewed before it runs out — up to shutdownTime, never past it.
 */
export function nextLeaseStep(claim: SandboxClaim, lease: NodeLease | undefined, nowMs: number, o: LeaseStepOptions): LeaseStep {
  const shutdownMs = parseTime(claim.spec.lifecycle?.shutdownTime);
  if (shutdownMs !== undefined && nowMs >= shutdownMs) return { kind: 'expire', at: new Date(shutdownMs) };
  const untilShutdown = shutdownMs === undefined ? Infinity : shutdownMs - nowMs;
  // the node reaps at its deadline; one that reaches shutdownTime needs no renewal
  if (lease === undefined || (shutdownMs !== undefined && lease.deadlineMs >= shutdownMs)) {
    return Number.isFinite(untilShutdown) ? { kind: 'wait', ms: untilShutdown } : { kind: 'none' };
  }
  if (nowMs >= lease.renewAtMs) {
    const ttlSeconds = shutdownMs === undefined ? o.leaseTtlSeconds : Math.max(1, Math.ceil(untilShutdown / 1000));
    return { kind: 'renew', ttlSeconds };
  }
  return { kind: 'wait', ms: Math.min(lease.renewAtMs - nowMs, untilShutdown) };
}
