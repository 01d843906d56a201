import type { SandboxClaim } from '@sandbox-scale/scale-core';
import { claimTtl, createdBefore } from './claim-lifecycle';

const now = new Date('2026-08-17T10:00:00Z');
function claim(lifecycle?: { shutdownTime?: string }, status?: SandboxClaim['status'], created?: string): SandboxClaim {
  return {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxClaim',
    metadata: { name: 'c', namespace: 'ns', ...(created ? { creationTimestamp: created } : {}) },
    spec: { warmPoolRef: { name: 'p' }, ...(lifecycle ? { lifecycle: { shutdownPolicy: 'Retain', ...lifecycle } } : {}) },
    ...(status ? { status } : {}),
  };
}

describe('claimTtl', () => {
  it('asks for the node default without a shutdownTime', () => {
    expect(claimTtl(claim(), now)).toEqual({ ok: true, ttlSeconds: 0 });
  });
  it('rounds the seconds until shutdownTime up', () => {
    expect(claimTtl(claim({ shutdownTime: '2026-08-17T10:01:30.500Z' }), now)).toEqual({ ok: true, ttlSeconds: 91 });
  });
  it('names the field when shutdownTime is not in the future', () => {
    const out = claimTtl(claim({ shutdownTime: '2026-08-17T10:00:00Z' }), now);
    expect(out.ok).toBe(false);
    if (!out.ok) expect(out.problem.field).toBe('spec.lifecycle.shutdownTime');
  });
});

describe('createdBefore', () => {
  it('compares the creation time with the process start', () => {
    expect(createdBefore(claim(undefined, undefined, '2026-08-17T09:59:59Z'), now)).toBe(true);
    expect(createdBefore(claim(undefined, undefined, '2026-08-17T10:00:01Z'), now)).toBe(false);
  });
});
