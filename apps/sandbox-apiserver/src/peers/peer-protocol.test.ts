import { statusErrorOfReply } from '@sandbox-scale/kube-runtime';
import { PeerCallSchema } from './peer-protocol';

describe('peer protocol', () => {
  it("keeps a peer's Status as the same error for the end user", () => {
    const e = statusErrorOfReply(409, {
      kind: 'Status',
      reason: 'AlreadyExists',
      message: 'sandboxes.agents.x-k8s.io "x" already exists',
      details: { name: 'x' },
    });
    expect(e?.code).toBe(409);
    expect(e?.reason).toBe('AlreadyExists');
    expect(e?.message).toContain('already exists');
  });

  it('is no Status when the code and the reason disagree, or the body is not a Status', () => {
    expect(statusErrorOfReply(200, { kind: 'Status', reason: 'NotFound' })).toBeUndefined();
    expect(statusErrorOfReply(404, { kind: 'Status', reason: 'NoSuchReason' })).toBeUndefined();
    expect(statusErrorOfReply(500, 'oops')).toBeUndefined();
  });

  it('accepts a delete without options and refuses an unknown verb', () => {
    expect(PeerCallSchema.safeParse({ op: 'delete', namespace: 'a', name: 'b', dryRun: false }).success).toBe(true);
    expect(PeerCallSchema.safeParse({ op: 'list', namespace: 'a' }).success).toBe(false);
    expect(PeerCallSchema.safeParse({ op: 'get', namespace: '', name: 'b' }).success).toBe(false);
  });

  it('carries list notices with the node and the inventory entry, and refuses one without them', () => {
    const entry = { name: 'a/b', id: 'sb_1', phase: 'Running', claimRef: 'sandbox:u1:a/b' };
    expect(PeerCallSchema.safeParse({ op: 'listed', namespace: 'a', name: 'b', node: 'n1', entry }).success).toBe(true);
    expect(PeerCallSchema.safeParse({ op: 'listed', namespace: 'a', name: 'b', entry }).success).toBe(false);
    expect(PeerCallSchema.safeParse({ op: 'listed', namespace: 'a', name: 'b', node: 'n1' }).success).toBe(false);
    expect(PeerCallSchema.safeParse({ op: 'released', namespace: 'a', name: 'b', claimId: 'sb_1' }).success).toBe(true);
    expect(PeerCallSchema.safeParse({ op: 'released', namespace: 'a', name: 'b', claimId: '' }).success).toBe(false);
  });
});
