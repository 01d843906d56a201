import { SandboxScaleError } from './base';
import {
  ClaimRoutingNotConfiguredError,
  isClaimRoutingNotConfigured,
  isFallback,
  isNoWarmCapacity,
  NoNodeCapacityError,
  noWarmCapacityOf,
  NoWarmCapacityError,
} from './capacity-errors';
import {
  AlreadyExistsError,
  BadRequestError,
  ConflictError,
  InvalidError,
  isAlreadyExistsError,
  isNotFoundError,
  NotFoundError,
  StatusError,
} from './status-errors';
import { INTERNAL_ERROR_MESSAGE, statusForError } from './status-for-error';

const wrap = (err: unknown, times = 2): Error => {
  let cur: unknown = err;
  for (let i = 0; i < times; i++) cur = new Error(`layer ${i}`, { cause: cur });
  return cur as Error;
};

describe('capacity errors and their predicates', () => {
  it('isFallback is true for NoNodeCapacityError however deeply it is wrapped', () => {
    const err = new NoNodeCapacityError();
    expect(isFallback(err)).toBe(true);
    expect(isFallback(wrap(err, 3))).toBe(true);
    expect(err).toBeInstanceOf(SandboxScaleError);
    expect(err.name).toBe('NoNodeCapacityError');
  });

  it('isFallback is false for other errors, authorization failures included', () => {
    expect(isFallback(new Error('not authorized'))).toBe(false);
    expect(isFallback(new NoWarmCapacityError())).toBe(false);
    expect(isFallback(undefined)).toBe(false);
    expect(isFallback('NoNodeCapacityError')).toBe(false);
  });

  it('isNoWarmCapacity walks the cause chain and is distinct from routing errors', () => {
    expect(isNoWarmCapacity(wrap(new NoWarmCapacityError({ template: 'img' })))).toBe(true);
    expect(isNoWarmCapacity(new ClaimRoutingNotConfiguredError())).toBe(false);
    expect(isClaimRoutingNotConfigured(wrap(new ClaimRoutingNotConfiguredError()))).toBe(true);
  });

  it('names template, net and size in the no-warm-capacity message', () => {
    const err = new NoWarmCapacityError({ template: 'img', net: '' });
    expect(err.message).toContain('template "img", net "none", size "small"');
    expect(noWarmCapacityOf(wrap(err))?.retryAfterSeconds).toBe(1);
  });

  it('survives a cause cycle', () => {
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    (a as { cause?: unknown }).cause = b;
    expect(isFallback(a)).toBe(false);
  });
});

describe('statusForError', () => {
  const sandboxes = { group: 'agents.x-k8s.io', resource: 'sandboxes' };

  it('passes NotFound through wrapping as a 404 with the Kubernetes message', () => {
    const s = statusForError(wrap(new NotFoundError(sandboxes, 's1')));
    expect(s).toMatchObject({
      kind: 'Status',
      apiVersion: 'v1',
      status: 'Failure',
      code: 404,
      reason: 'NotFound',
      message: 'sandboxes.agents.x-k8s.io "s1" not found',
    });
    expect(s.details).toEqual({ name: 's1', group: 'agents.x-k8s.io', kind: 'sandboxes' });
  });

  it('answers 409 AlreadyExists and Conflict', () => {
    expect(statusForError(new AlreadyExistsError(sandboxes, 's1'))).toMatchObject({
      code: 409,
      reason: 'AlreadyExists',
      message: 'sandboxes.agents.x-k8s.io "s1" already exists',
    });
    expect(statusForError(new ConflictError('precondition failed'))).toMatchObject({ code: 409, reason: 'Conflict' });
    expect(isAlreadyExistsError(wrap(new AlreadyExistsError(sandboxes, 's1')))).toBe(true);
    expect(isNotFoundError(new AlreadyExistsError(sandboxes, 's1'))).toBe(false);
  });

  it('answers 422 Invalid with every cause', () => {
    const err = new InvalidError({ group: 'agents.x-k8s.io', kind: 'Sandbox' }, 'x', [
      { reason: 'FieldValueRequired', field: 'spec.podTemplate', message: 'Required value' },
      { reason: 'FieldValueInvalid', field: 'metadata.name', message: 'Invalid value' },
    ]);
    const s = statusForError(err);
    expect(s.code).toBe(422);
    expect(s.message).toBe('Sandbox.agents.x-k8s.io "x" is invalid: [spec.podTemplate: Required value, metadata.name: Invalid value]');
    expect(s.details?.causes).toHaveLength(2);
  });

  it('answers a retryable 503 for no warm capacity, even when wrapped', () => {
    const s = statusForError(wrap(new NoWarmCapacityError({ template: 'img' })));
    expect(s).toMatchObject({ code: 503, reason: 'ServiceUnavailable', details: { retryAfterSeconds: 1 } });
    expect(s.message).toContain('template "img"');
  });

  it('answers a retryable 503 with its message for a node at capacity, found by name through wrapping', () => {
    // sandboxd-client's NodeAtCapacityError; this package sits below it and matches the name.
    class NodeAtCapacityError extends SandboxScaleError {}
    expect(statusForError(wrap(new NodeAtCapacityError('node claim quota reached')))).toMatchObject({
      code: 503,
      reason: 'ServiceUnavailable',
      message: 'node claim quota reached',
      details: { retryAfterSeconds: 1 },
    });
  });

  it('answers 400 for a bad request', () => {
    expect(statusForError(new BadRequestError('bad ttl'))).toMatchObject({ code: 400, reason: 'BadRequest', message: 'bad ttl' });
  });

  it('answers 500 for sandboxd failures, missing routing and anything unknown', () => {
    class SandboxdHttpError extends SandboxScaleError {
      readonly statusCode = 500;
    }
    expect(statusForError(wrap(new SandboxdHttpError('provisioning failed')))).toMatchObject({
      code: 500,
      reason: 'InternalError',
      message: INTERNAL_ERROR_MESSAGE,
    });
    expect(statusForError(new ClaimRoutingNotConfiguredError())).toMatchObject({ code: 500, reason: 'InternalError' });
    expect(statusForError('boom')).toMatchObject({ code: 500, message: INTERNAL_ERROR_MESSAGE });
  });

  it('never carries the internal text of a 500 to the client, not even in causes', () => {
    const leaky = new Error('POST http://10.0.0.7:8080/v1/claims: 500 {"error":"disk /dev/vdb full"}');
    const explicit = new StatusError('InternalError', 'sandbox a/b carries no claim id on node http://10.0.0.7:8080');
    for (const err of [leaky, wrap(leaky), explicit, 'raw text http://10.0.0.7']) {
      const s = statusForError(err);
      expect(s).toMatchObject({ code: 500, reason: 'InternalError', message: INTERNAL_ERROR_MESSAGE });
      expect(JSON.stringify(s)).not.toContain('10.0.0.7');
    }
  });
});
