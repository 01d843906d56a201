import type { SandboxClaim } from '@sandbox-scale/scale-core';
import { currentLease, nextLeaseStep, renewAtMs, type NodeLease } from './claim-lease';

const T0 = Date.parse('2026-08-17T10:00:00Z');
const iso = (ms: number): string => new Date(ms).toISOString();

function bound(o: { shutdownTime?: string; deadline?: string; boundAt?: string; id?: string } = {}): SandboxClaim {
  return {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxClaim',
    metadata: { name: 'c', namespace: 'ns' },
    spec: {
      warmPoolRef: { name: 'p' },
      ...(o.shutdownTime ? { lifecycle: { shutdownPolicy: 'Retain', shutdownTime: o.shutdownTime } } : {}),
    },
    status: {
      sandbox: { name: 'c1', claimID: o.id ?? 'sb_1', nodeName: 'n1', ...(o.deadline ? { deadline: o.deadline } : {}) },
      conditions: [{ type: 'Bound', status: 'True', reason: 'NodeLocalClaim', message: 'm', lastTransitionTime: o.boundAt ?? iso(T0) }],
    },
  };
}

const opts = { leaseTtlSeconds: 0 };

describe('renewAtMs', () => {
  it('falls between four and six tenths of the lease', () => {
    expect(renewAtMs(0, 1000, () => 0)).toBe(400);
    expect(renewAtMs(0, 1000, () => 0.999999)).toBeCloseTo(600, 0);
  });
});

describe('currentLease', () => {
  it('rebuilds the lease granted at bind from status when none is known', () => {
    const lease = currentLease(bound({ deadline: iso(T0 + 300_000) }), undefined, () => 0);
    expect(lease).toEqual({ claimId: 'sb_1', deadlineMs: T0 + 300_000, renewAtMs: T0 + 120_000 });
  });
  it('prefers the lease this process renewed, for the same sandbox only', () => {
    const known: NodeLease = { claimId: 'sb_1', deadlineMs: T0 + 900_000, renewAtMs: T0 + 600_000 };
    expect(currentLease(bound({ deadline: iso(T0 + 300_000) }), known)).toBe(known);
    expect(currentLease(bound({ deadline: iso(T0 + 300_000), id: 'sb_2' }), known, () => 0)?.claimId).toBe('sb_2');
  });
  it('is undefined when the node granted no deadline', () => {
    expect(currentLease(bound(), undefined)).toBeUndefined();
  });
});

describe('nextLeaseStep', () => {
  it('renews an unbounded claim once the renewal point has passed, for the configured lease', () => {
    const lease: NodeLease = { claimId: 'sb_1', deadlineMs: T0 + 300_000, renewAtMs: T0 + 180_000 };
    expect(nextLeaseStep(bound(), lease, T0 + 10_000, opts)).toEqual({ kind: 'wait', ms: 170_000 });
    expect(nextLeaseStep(bound(), lease, T0 + 180_000, { leaseTtlSeconds: 900 })).toEqual({ kind: 'renew', ttlSeconds: 900 });
  });
  it('renews at once when the recorded deadline is already past (a failover after renewals)', () => {
    const claim = bound({ deadline: iso(T0 + 300_000) });
    expect(nextLeaseStep(claim, currentLease(claim, undefined), T0 + 400_000, opts)).toEqual({ kind: 'renew', ttlSeconds: 0 });
  });
  it('renews a bounded claim only up to its shutdownTime', () => {
    const claim = bound({ shutdownTime: iso(T0 + 1_000_000) });
    const lease: NodeLease = { claimId: 'sb_1', deadlineMs: T0 + 300_000, renewAtMs: T0 + 200_000 };
    expect(nextLeaseStep(claim, lease, T0 + 200_000, { leaseTtlSeconds: 60 })).toEqual({ kind: 'renew', ttlSeconds: 800 });
    expect(nextLeaseStep(claim, lease, T0 + 100_000, opts)).toEqual({ kind: 'wait', ms: 100_000 });
  });
  it('waits for shutdownTime when the node deadline already reaches it, then expires', () => {
    const claim = bound({ shutdownTime: iso(T0 + 60_000) });
    const lease: NodeLease = { claimId: 'sb_1', deadlineMs: T0 + 60_000, renewAtMs: T0 + 30_000 };
    expect(nextLeaseStep(claim, lease, T0 + 40_000, opts)).toEqual({ kind: 'wait', ms: 20_000 });
    expect(nextLeaseStep(claim, lease, T0 + 60_000, opts)).toEqual({ kind: 'expire', at: new Date(T0 + 60_000) });
  });
  it('has nothing to do without a deadline or a shutdownTime', () => {
    expect(nextLeaseStep(bound(), undefined, T0, opts)).toEqual({ kind: 'none' });
  });
});
