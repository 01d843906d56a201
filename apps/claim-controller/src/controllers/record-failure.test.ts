import { ApiException } from '@kubernetes/client-node';
import { recordFailure } from './record-failure';

const a = { claimId: 'sb_1', node: 'n1', address: '10.0.0.5:7777', token: 't0ken' };
const status = (code: number, reason: string, message: string): ApiException<string> =>
  new ApiException(code, message, JSON.stringify({ kind: 'Status', status: 'Failure', code, reason, message }), {});

/** What a 403 Forbidden with `message` on the record in team-x becomes. */
const forbidden = (message: string) => recordFailure(status(403, 'Forbidden', message), a, 'team-x');

describe('recordFailure', () => {
  it('names the RBAC refusal of the Secret and the chart value that grants it', () => {
    const p = forbidden(
      'secrets "c-sandbox-token" is forbidden: User "system:serviceaccount:s:cc" cannot patch resource "secrets" in API group "" in the namespace "team-x"',
    );
    expect(p.field).toBe('metadata.namespace');
    expect(p.message).toContain('node n1 delivered sandbox sb_1');
    expect(p.message).toContain('403 Forbidden: secrets "c-sandbox-token" is forbidden');
    expect(p.message).toContain('claimController.secretNamespaces');
    expect(p.message).toContain('The sandbox is kept');
    expect(p.message).not.toContain('t0ken');
  });

  it('passes a quota refusal on as the API server worded it, without the RBAC hint', () => {
    const p = forbidden(
      'secrets "c-sandbox-token" is forbidden: exceeded quota: no-secrets, requested: secrets=1, used: secrets=0, limited: secrets=0',
    );
    expect(p.field).toBe('status.sandbox');
    expect(p.message).toContain('exceeded quota: no-secrets');
    expect(p.message).not.toContain('secretNamespaces');
  });

  it('names a transport failure', () => {
    expect(recordFailure(new Error('connect ECONNREFUSED 127.0.0.1:6443'), a, 'ns').message).toContain(
      '(connect ECONNREFUSED 127.0.0.1:6443)',
    );
  });
});
