import { z } from 'zod';
import { toMicroTime } from '../time';

/** coordination.k8s.io/v1 Lease, the parts leader election reads and writes. */
export const LeaseSchema = z.object({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: z.looseObject({ name: z.string(), namespace: z.string().optional(), resourceVersion: z.string().optional() }),
  spec: z
    .object({
      holderIdentity: z.string().nullish(),
      leaseDurationSeconds: z.number().nullish(),
      acquireTime: z.string().nullish(),
      renewTime: z.string().nullish(),
      leaseTransitions: z.number().nullish(),
    })
    .nullish(),
});

export type Lease = z.infer<typeof LeaseSchema>;

export interface LeaseRecord {
  holderIdentity: string;
  leaseDurationSeconds: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions: number;
}

export function recordOf(lease: Lease): LeaseRecord {
  const s = lease.spec ?? {};
  return {
    holderIdentity: s.holderIdentity ?? '',
    leaseDurationSeconds: s.leaseDurationSeconds ?? 0,
    acquireTime: s.acquireTime ?? undefined,
    renewTime: s.renewTime ?? undefined,
    leaseTransitions: s.leaseTransitions ?? 0,
  };
}

export function sameRecord(a: LeaseRecord | undefined, b: LeaseRecord): boolean {
  return !!a && a.holderIdentity === b.holderIdentity && a.renewTime === b.renewTime && a.leaseTransitions === b.leaseTransitions;
}

/**
 * Whether another holder's lease still stands. Judged by when *we* last saw the record change,
 * plus its duration, not by its renewTime: clocks of different machines are never compared.
 */
export function isHeldByOther(rec: LeaseRecord, identity: string, observedAtMs: number, nowMs: number): boolean {
  if (rec.holderIdentity === '' || rec.holderIdentity === identity) return false;
  return observedAtMs + rec.leaseDurationSeconds * 1000 > nowMs;
}

/** The record to write to take or keep the lease. */
export function nextRecord(prev: LeaseRecord | undefined, identity: string, leaseDurationSeconds: number, nowMs: number): LeaseRecord {
  const now = toMicroTime(nowMs);
  if (prev && prev.holderIdentity === identity) return { ...prev, leaseDurationSeconds, renewTime: now };
  return {
    holderIdentity: identity,
    leaseDurationSeconds,
    acquireTime: now,
    renewTime: now,
    leaseTransitions: prev ? prev.leaseTransitions + 1 : 0,
  };
}

/** Gives the lease up: no holder and a 1 s duration, so a standby takes over at its next try. */
export function releasedRecord(prev: LeaseRecord, nowMs: number): LeaseRecord {
  const now = toMicroTime(nowMs);
  return { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: now, renewTime: now, leaseTransitions: prev.leaseTransitions };
}

export function leaseBody(name: string, namespace: string, rec: LeaseRecord, resourceVersion?: string): Lease {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name, namespace, ...(resourceVersion ? { resourceVersion } : {}) },
    spec: { ...rec },
  };
}
