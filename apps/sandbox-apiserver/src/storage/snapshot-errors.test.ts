import { INTERNAL_ERROR_MESSAGE, NotFoundError, statusForError } from '@sandbox-scale/scale-core';
import { NodeAtCapacityError, SandboxdHttpError } from '@sandbox-scale/sandboxd-client';
import { snapshotStatusError } from './snapshot-errors';

const ctx = { verb: 'claim snapshot', node: 'n1', id: 'ck_1' };
const http = (statusCode: number, message: string, retryAfterSeconds?: number): SandboxdHttpError =>
  new SandboxdHttpError({ operation: 'claimCheckpoint', statusCode, message, ...(retryAfterSeconds ? { retryAfterSeconds } : {}) });

describe('snapshotStatusError', () => {
  it.each([
    [400, 'invalid checkpoint name', 'BadRequest'],
    [404, 'unknown checkpoint', 'NotFound'],
    [409, 'egress-lane checkpoints cannot be claimed', 'Conflict'],
    [429, 'node claim quota reached', 'TooManyRequests'],
    [503, 'heal limit', 'ServiceUnavailable'],
  ])('sandboxd %i becomes %s naming the verb, id, node and the node message', (code, message, reason) => {
    const s = statusForError(snapshotStatusError(http(code, message), ctx));
    expect(s.reason).toBe(reason);
    expect(s.message).toContain('claim snapshot ck_1 on node "n1"');
    expect(s.message).toContain(message);
  });

  it("answers a promote the node refuses with 409 as a 409 saying why, and a 404 as the sandbox's", () => {
    const promote = { verb: 'promote', node: 'n1', id: 'sb_1', notFoundKind: 'sandboxes' };
    const conflict = statusForError(snapshotStatusError(http(409, 'template belongs to a configured pool'), promote));
    expect(conflict).toMatchObject({ code: 409, reason: 'Conflict' });
    expect(conflict.message).toBe('promote sb_1 on node "n1": template belongs to a configured pool');
    expect(statusForError(snapshotStatusError(http(404, 'unknown sandbox'), promote)).details?.kind).toBe('sandboxes');
  });

  it('keeps Retry-After of a 503 and gives 429 a retry hint', () => {
    expect(statusForError(snapshotStatusError(http(503, 'busy', 7), ctx)).details?.retryAfterSeconds).toBe(7);
    const capacity = statusForError(snapshotStatusError(new NodeAtCapacityError({ statusCode: 429, message: 'node draining' }), ctx));
    expect(capacity).toMatchObject({ code: 429, reason: 'TooManyRequests' });
    expect(capacity.details?.retryAfterSeconds).toBe(1);
  });

  it('answers a node 500 with the generic message; the node text stays in the error for the log', () => {
    const err = snapshotStatusError(http(500, 'provisioning failed'), ctx);
    expect(statusForError(err)).toMatchObject({ code: 500, reason: 'InternalError', message: INTERNAL_ERROR_MESSAGE });
    expect(err.message).toContain('claim snapshot ck_1 on node "n1": provisioning failed');
  });

  it('passes a Status error through and turns anything else into a 500', () => {
    const nf = new NotFoundError({ group: 'agents.x-k8s.io', resource: 'sandboxes' }, 'x');
    expect(snapshotStatusError(nf, ctx)).toBe(nf);
    expect(statusForError(snapshotStatusError(new Error('socket hang up'), ctx))).toMatchObject({ code: 500, reason: 'InternalError' });
  });
});
