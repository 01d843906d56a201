import { E2bApiError } from '@sandbox-scale/e2b-protocol';
import { ClaimTimeoutError, ForbiddenError, NotFoundError, UnavailableError } from '@sandbox-scale/sdk';
import { SANDBOX_LABELS } from '@sandbox-scale/scale-core';
import { asApiError, E2B_ANNOTATIONS, e2bSandboxOf } from './e2b-backend';

const now = new Date('2026-12-07T10:00:00Z');
const target = { verb: 'get', resource: 'sandboxes', namespace: 'team', name: 'sb' };

describe('e2bSandboxOf', () => {
  const served = {
    metadata: { name: 'agent-1', creationTimestamp: '2026-12-07T09:00:00Z', labels: { [SANDBOX_LABELS.phase]: 'Paused' } },
  };
  it("reports the claim's pool, end and metadata, and the node's word on pause over the served phase", () => {
    const claim = {
      metadata: { name: 'agent-1', annotations: { [E2B_ANNOTATIONS.metadata]: '{"app":"x y"}' } },
      spec: { warmPoolRef: { name: 'agent' }, lifecycle: { shutdownTime: '2026-12-07T10:05:00Z' } },
    };
    const s = e2bSandboxOf(served, claim, now, { paused: false, cpuCount: 2, memTotalBytes: 512 * 1024 * 1024 });
    expect(s).toEqual({
      sandboxID: 'agent-1',
      templateID: 'agent',
      state: 'running',
      startedAt: new Date('2026-12-07T09:00:00Z'),
      endAt: new Date('2026-12-07T10:05:00Z'),
      metadata: { app: 'x y' },
      cpuCount: 2,
      memoryMB: 512,
      diskSizeMB: 0,
    });
    expect(e2bSandboxOf(served, claim, now).state).toBe('paused');
  });

  it('keeps no metadata from an annotation that is not a map of strings, prototype keys included', () => {
    for (const bad of ['{"a":1}', 'not json', '["x"]']) {
      const claim = { metadata: { name: 'agent-1', annotations: { [E2B_ANNOTATIONS.metadata]: bad } } };
      expect(e2bSandboxOf(served, claim, now).metadata).toEqual({});
    }
    const proto = { metadata: { name: 'agent-1', annotations: { [E2B_ANNOTATIONS.metadata]: '{"__proto__":{"polluted":"yes"}}' } } };
    const m = e2bSandboxOf(served, proto, now).metadata;
    expect(Object.getPrototypeOf(m)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('gives a sandbox no claim ends a far end, and no template', () => {
    const s = e2bSandboxOf({ metadata: { name: 'made', creationTimestamp: '2026-12-07T09:00:00Z' } }, undefined, now);
    expect(s.templateID).toBe('');
    expect(s.endAt.getTime()).toBeGreaterThan(now.getTime() + 365 * 24 * 3_600_000);
  });
});

describe('the errors of calls made as the caller', () => {
  it('answer the control plane with the status e2b reads from its body', () => {
    const cases: [Error, number][] = [
      [new NotFoundError('gone', { code: 404, target }), 404],
      [new ForbiddenError('no', { code: 403, target }), 403],
      [new UnavailableError('later', { code: 503, target }), 503],
      [new ClaimTimeoutError('slow'), 504],
    ];
    for (const [err, status] of cases) {
      const api = asApiError(err);
      expect(api).toBeInstanceOf(E2bApiError);
      expect((api as E2bApiError).status).toBe(status);
    }
  });

  it('leaves any other error as it is, so the server logs it and answers 500', () => {
    const plain = new Error('boom');
    expect(asApiError(plain)).toBe(plain);
  });
});
