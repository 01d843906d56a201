import { boundSandboxOf, claimPhase, type ClaimObject } from './claim-status';

const at = '2026-01-01T00:00:00Z';
const cond = (type: string, status: string, reason = 'R') => ({
  type,
  status,
  reason,
  message: `${type} ${status}`,
  lastTransitionTime: at,
});

describe('claim status, read across layouts', () => {
  it("reads the node id from status.sandbox.name and serves the sandbox under the claim name (today's layout)", () => {
    const c: ClaimObject = {
      metadata: { name: 'agent-1' },
      status: {
        sandbox: { name: 'sb_42', nodeName: 'n1', address: '10.0.0.1:7000', tokenSecretName: 'agent-1-sandbox-token' },
        conditions: [cond('Bound', 'True')],
      },
    };
    expect(boundSandboxOf(c)).toEqual({
      name: 'agent-1',
      claimId: 'sb_42',
      node: 'n1',
      address: '10.0.0.1:7000',
      tokenSecretName: 'agent-1-sandbox-token',
      deadline: undefined,
    });
  });

  it('takes status.sandbox.name as the served name once the node id has a field of its own', () => {
    const c: ClaimObject = {
      metadata: { name: 'agent-1' },
      status: { sandbox: { name: 'agent-1', claimId: 'sb_42', nodeName: 'n1', podIPs: ['10.0.0.1'] }, conditions: [cond('Ready', 'True')] },
    };
    expect(boundSandboxOf(c)).toMatchObject({ name: 'agent-1', claimId: 'sb_42', address: '10.0.0.1' });
  });

  it('prefers Ready over Bound when both are present', () => {
    const sandbox = { name: 'sb_1', nodeName: 'n1' };
    expect(
      claimPhase({
        metadata: { name: 'a' },
        status: { sandbox, conditions: [cond('Bound', 'True'), cond('Ready', 'False', 'SandboxNotReady')] },
      }).state,
    ).toBe('pending');
    expect(
      claimPhase({ metadata: { name: 'a' }, status: { sandbox, conditions: [cond('Bound', 'False'), cond('Ready', 'True')] } }).state,
    ).toBe('ready');
    expect(claimPhase({ metadata: { name: 'a' }, status: { sandbox, conditions: [cond('Bound', 'True')] } }).state).toBe('ready');
  });

  it('fails on a reason waiting cannot fix and waits on any other', () => {
    expect(claimPhase({ metadata: { name: 'a' }, status: { conditions: [cond('Ready', 'False', 'WarmPoolNotFound')] } })).toMatchObject({
      state: 'failed',
      reason: 'WarmPoolNotFound',
    });
    expect(claimPhase({ metadata: { name: 'a' }, status: { conditions: [cond('Ready', 'False', 'NoWarmCapacity')] } })).toMatchObject({
      state: 'pending',
      reason: 'NoWarmCapacity',
    });
    expect(claimPhase({ metadata: { name: 'a' } })).toMatchObject({ state: 'pending', reason: 'Pending' });
  });

  it('is not ready on a True condition without a sandbox in status', () => {
    expect(claimPhase({ metadata: { name: 'a' }, status: { conditions: [cond('Ready', 'True')] } }).state).toBe('pending');
  });
});
