import { ApiException } from '@kubernetes/client-node';
import { SandboxScaleError } from '@sandbox-scale/scale-core';
import {
  isAborted,
  isAlreadyExists,
  isApiError,
  isForbidden,
  isNotFound,
  isUnavailable,
  toSdkError,
  type UnavailableError,
} from './errors';
import { isRetryableBeforeClaim, mayHaveClaimed } from './fast-path';

const status = (code: number, reason: string, message: string, details: Record<string, unknown> = {}) =>
  JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message, details });
const target = { verb: 'create', resource: 'sandboxes/pause', group: 'agents.x-k8s.io', namespace: 'team', name: 'sb' };

describe('toSdkError', () => {
  it('names the verb, resource, name and namespace of a denial', () => {
    const err = toSdkError(
      new ApiException(403, 'HTTP 403', status(403, 'Forbidden', 'User "u" cannot create resource "sandboxes/pause"'), {}),
      target,
    );
    expect(isForbidden(err)).toBe(true);
    expect(isApiError(err)).toBe(true);
    expect((err as Error).message).toBe(
      'forbidden: cannot create sandboxes/pause.agents.x-k8s.io "sb" in namespace "team": User "u" cannot create resource "sandboxes/pause"',
    );
  });

  it('tells AlreadyExists from other conflicts and maps 404', () => {
    expect(isAlreadyExists(toSdkError(new ApiException(409, '', status(409, 'AlreadyExists', 'x'), {}), target))).toBe(true);
    expect(isAlreadyExists(toSdkError(new ApiException(409, '', status(409, 'Conflict', 'x'), {}), target))).toBe(false);
    expect(isNotFound(toSdkError(new ApiException(404, '', status(404, 'NotFound', 'x'), {}), target))).toBe(true);
  });

  it('reads Retry-After from the header or the Status details', () => {
    const fromBody = toSdkError(
      new ApiException(503, '', status(503, 'ServiceUnavailable', 'no warm capacity', { retryAfterSeconds: 1 }), {}),
      target,
    ) as UnavailableError;
    expect(fromBody.retryAfterSeconds).toBe(1);
    const fromHeader = toSdkError(new ApiException(503, '', 'service unavailable', { 'Retry-After': '7' }), target) as UnavailableError;
    expect(fromHeader.retryAfterSeconds).toBe(7);
    expect(isUnavailable(fromHeader)).toBe(true);
  });

  it('passes through what is not an HTTP answer, and marks a cancelled call', () => {
    const refused = new SandboxScaleError('connect ECONNREFUSED');
    expect(toSdkError(refused, target)).toBe(refused);
    expect(isAborted(toSdkError(refused, target, AbortSignal.abort()))).toBe(true);
  });
});

describe('isRetryableBeforeClaim', () => {
  it('retries a 503 with Retry-After and a 429, never a bare 503 or a 500', () => {
    const e = (code: number, details: Record<string, unknown> = {}) =>
      toSdkError(new ApiException(code, '', status(code, 'x', 'x', details), {}), target);
    expect(isRetryableBeforeClaim(e(503, { retryAfterSeconds: 1 }))).toBe(true);
    expect(isRetryableBeforeClaim(e(429))).toBe(true);
    expect(isRetryableBeforeClaim(e(503))).toBe(false);
    expect(isRetryableBeforeClaim(e(500))).toBe(false);
  });
});

describe('mayHaveClaimed', () => {
  const e = (code: number) => toSdkError(new ApiException(code, '', status(code, 'x', 'x'), {}), target);
  it('is true for an answer lost in flight: cancelled, a 5xx, a dropped connection', () => {
    expect(mayHaveClaimed(new Error('aborted'), true)).toBe(true);
    expect(mayHaveClaimed(e(500), false)).toBe(true);
    expect(
      mayHaveClaimed(new Error('fetch failed', { cause: Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }) }), false),
    ).toBe(true);
  });

  it('is false for a 4xx and for a connection never made', () => {
    expect(mayHaveClaimed(e(403), false)).toBe(false);
    expect(mayHaveClaimed(e(422), false)).toBe(false);
    expect(
      mayHaveClaimed(
        new Error('fetch failed', { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) }),
        false,
      ),
    ).toBe(false);
  });
});
