import { DNS1123_SUBDOMAIN, type SandboxClaim } from '@sandbox-scale/scale-core';
import { boundClaimId, boundStatus, recordsSandbox, setCondition, tokenSecretName } from './claim-status';

const claim: SandboxClaim = {
  apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
  kind: 'SandboxClaim',
  metadata: { name: 'c1', namespace: 'ns', generation: 2 },
  spec: { warmPoolRef: { name: 'p' } },
};
const t0 = new Date('2026-08-17T10:00:00Z');
const t1 = new Date('2026-08-17T10:05:00Z');

describe('boundStatus', () => {
  it('puts the host in podIPs and the host:port in address, never the token', () => {
    const s = boundStatus(
      claim,
      { claimId: 'sb_1', node: 'n1', address: '10.0.0.5:7777', token: 'secret-token', deadline: '2026-08-17T12:00:00Z' },
      t0,
      true,
    );
    expect(s.sandbox).toEqual({
      name: 'c1',
      claimID: 'sb_1',
      nodeName: 'n1',
      podIPs: ['10.0.0.5'],
      address: '10.0.0.5:7777',
      deadline: '2026-08-17T12:00:00Z',
      tokenSecretName: tokenSecretName('c1'),
    });
    expect(s.conditions?.[0]).toMatchObject({
      type: 'Bound',
      status: 'True',
      reason: 'NodeLocalClaim',
      lastTransitionTime: '2026-08-17T10:00:00Z',
      observedGeneration: 2,
    });
    expect(JSON.stringify(s)).not.toContain('secret-token');
  });

  it('sets Ready with the status, reason and message of Bound, for clients that wait on Ready', () => {
    const s = boundStatus(claim, { claimId: 'sb_1', node: 'n1', address: '10.0.0.5:7777', token: '', deadline: '' }, t0, false);
    const bound = s.conditions?.find((c) => c.type === 'Bound');
    const ready = s.conditions?.find((c) => c.type === 'Ready');
    expect(ready).toEqual({ ...bound, type: 'Ready' });
  });
});

describe('boundClaimId', () => {
  const withSandbox = (sandbox: NonNullable<SandboxClaim['status']>['sandbox']): SandboxClaim => ({ ...claim, status: { sandbox } });

  it('reads the node claim id from claimID, and from name in a status written before claimID existed', () => {
    expect(boundClaimId(withSandbox({ name: 'c1', claimID: 'sb_1' }))).toBe('sb_1');
    expect(boundClaimId(withSandbox({ name: 'sb_2' }))).toBe('sb_2');
    expect(recordsSandbox(withSandbox({ name: 'sb_2' }))).toBe(true);
  });

  it('is empty for an unbound claim, even one whose status names its Sandbox', () => {
    expect(boundClaimId(claim)).toBe('');
    expect(boundClaimId(withSandbox({ name: 'c1' }))).toBe('');
    expect(recordsSandbox(withSandbox({ name: 'c1' }))).toBe(false);
  });
});

describe('setCondition', () => {
  it('keeps lastTransitionTime while the status holds and moves it on a flip', () => {
    const first = setCondition(undefined, { type: 'Bound', status: 'False', reason: 'NoWarmCapacity', message: 'm' }, t0);
    const same = setCondition(first, { type: 'Bound', status: 'False', reason: 'NoWarmCapacity', message: 'm2' }, t1);
    expect(same[0]?.lastTransitionTime).toBe('2026-08-17T10:00:00Z');
    const flipped = setCondition(same, { type: 'Bound', status: 'True', reason: 'NodeLocalClaim', message: 'm3' }, t1);
    expect(flipped).toHaveLength(1);
    expect(flipped[0]?.lastTransitionTime).toBe('2026-08-17T10:05:00Z');
  });
});

describe('tokenSecretName', () => {
  it('appends -sandbox-token while it fits', () => {
    expect(tokenSecretName('c1')).toBe('c1-sandbox-token');
  });
  it('gives a valid, distinct name of at most 253 characters for any claim name', () => {
    const names = ['a'.repeat(253), `${'a'.repeat(229)}.${'b'.repeat(23)}`, `${'a'.repeat(229)}-${'b'.repeat(23)}`, `${'a'.repeat(252)}b`];
    const out = names.map(tokenSecretName);
    for (const n of out) {
      expect(n.length).toBeLessThanOrEqual(253);
      expect(n).toMatch(DNS1123_SUBDOMAIN);
      expect(n.endsWith('-sandbox-token')).toBe(true);
    }
    expect(new Set(out).size).toBe(names.length);
  });
});
