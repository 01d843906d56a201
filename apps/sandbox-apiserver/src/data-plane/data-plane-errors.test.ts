import { ArchiveError, BadRequestError, statusForError } from '@sandbox-scale/scale-core';
import { AgentError, SandboxdHttpError, SandboxdTransportError } from '@sandbox-scale/sandboxd-client';
import { dataPlaneStatusError } from './data-plane-errors';

const call = { namespace: 'team', name: 'box', what: 'exec', node: 'node-1', timeoutSeconds: 5 };
const fromNode = (statusCode: number, message = 'why', retryAfterSeconds?: number): SandboxdHttpError =>
  new SandboxdHttpError({ operation: 'exec', statusCode, message, ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}) });
const status = (err: unknown): { code: number; reason: string; message: string; details?: { retryAfterSeconds?: number } } =>
  statusForError(dataPlaneStatusError(err, call));

describe('data-plane errors', () => {
  it.each([
    [400, 400, 'BadRequest'],
    [404, 404, 'NotFound'],
    [409, 409, 'Conflict'],
    [413, 413, 'RequestEntityTooLarge'],
    [502, 503, 'ServiceUnavailable'],
    [503, 503, 'ServiceUnavailable'],
    [504, 504, 'Timeout'],
  ])("turns the node's %i into %i %s naming the sandbox and the node's cause", (node, code, reason) => {
    const s = status(fromNode(node, 'the cause'));
    expect(s).toMatchObject({ code, reason });
    expect(s.message).toContain('sandbox team/box');
    expect(s.message).toContain('the cause');
  });

  it('keeps the Retry-After of a busy node, names the timeout, and hides its own faults behind a 500', () => {
    expect(status(fromNode(503, 'node exec memory exhausted', 3)).details?.retryAfterSeconds).toBe(3);
    expect(status(fromNode(504)).message).toContain('timeoutSeconds=5');
    expect(status(fromNode(401, 'invalid api token'))).toMatchObject({ code: 500, reason: 'InternalError' });
    expect(status(fromNode(401)).message).not.toContain('invalid api token');
  });

  it("maps the agent's error kinds, a node out of reach, a bad tar stream, and passes a Status through", () => {
    expect(status(new AgentError({ operation: 'fs_read', kind: 'not_found', message: 'no such file' }))).toMatchObject({
      code: 404,
      message: expect.stringContaining('no such file'),
    });
    expect(status(new AgentError({ operation: 'fs_read', kind: 'bad_request', message: 'is a directory' }))).toMatchObject({ code: 400 });
    expect(status(new AgentError({ operation: 'x', kind: 'unimplemented', message: '' }))).toMatchObject({ code: 400 });
    expect(status(new SandboxdTransportError({ operation: 'exec', url: 'http://n', cause: new Error('ECONNREFUSED') }))).toMatchObject({
      code: 503,
      message: expect.stringContaining('node node-1'),
    });
    expect(status(new BadRequestError('as it was'))).toMatchObject({ code: 400, message: 'as it was' });
    expect(status(new ArchiveError('truncated tar archive: an entry ends early'))).toMatchObject({
      code: 400,
      reason: 'BadRequest',
      message: 'exec in sandbox team/box: truncated tar archive: an entry ends early',
    });
    expect(status(new Error('boom'))).toMatchObject({ code: 500 });
  });
});
