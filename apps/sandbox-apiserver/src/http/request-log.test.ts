import { NoWarmCapacityError, StatusError, statusForError } from '@sandbox-scale/scale-core';
import { requestLogLevel } from './request-log';

const claimPath = '/apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes';

describe('requestLogLevel', () => {
  it('logs a 500 as an error', () => {
    expect(requestLogLevel(statusForError(new Error('boom')), claimPath)).toBe('error');
  });

  it('logs no warm capacity (503 with Retry-After) at info, not as an error', () => {
    const status = statusForError(new NoWarmCapacityError({ template: 'python-agent', net: 'default', size: 'small' }));
    expect(status.code).toBe(503);
    expect(requestLogLevel(status, claimPath)).toBe('info');
  });

  it('logs a client error at debug', () => {
    expect(requestLogLevel(statusForError(new StatusError('NotFound', 'sandboxes "x" not found')), claimPath)).toBe('debug');
    expect(requestLogLevel(statusForError(new StatusError('Forbidden', 'no')), claimPath)).toBe('debug');
  });

  it('keeps a 503 without Retry-After an error', () => {
    const status = { ...statusForError(new NoWarmCapacityError()), details: {} };
    expect(requestLogLevel(status, claimPath)).toBe('error');
  });

  it('leaves a data-plane 503 to the data plane audit', () => {
    const status = statusForError(new NoWarmCapacityError());
    expect(requestLogLevel(status, `${claimPath}/s1/exec`)).toBe('silent');
  });
});
