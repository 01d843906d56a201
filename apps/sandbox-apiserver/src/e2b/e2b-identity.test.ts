import { isE2bApiError } from '@sandbox-scale/e2b-protocol';
import { apiKeyOf, e2bNamespaceOf, sandboxIdOfHost } from './e2b-identity';

const user = (username: string) => ({ username, uid: 'u', groups: [], extra: {} });

function refusal(f: () => unknown): { status: number; message: string } | undefined {
  try {
    f();
  } catch (err) {
    if (isE2bApiError(err)) return { status: err.status, message: err.message };
    throw err;
  }
  return undefined;
}

describe('the e2b caller', () => {
  it("puts a ServiceAccount's sandboxes in its own namespace, and another user's in the chart's default", () => {
    expect(e2bNamespaceOf(user('system:serviceaccount:team-a:agent'), 'shared')).toBe('team-a');
    expect(e2bNamespaceOf(user('alice@example.com'), 'shared')).toBe('shared');
    expect(refusal(() => e2bNamespaceOf(user('alice@example.com'), undefined))).toMatchObject({ status: 403 });
    // a name that only looks like a ServiceAccount's is another user
    expect(refusal(() => e2bNamespaceOf(user('system:serviceaccount:Team_A:agent'), undefined))).toMatchObject({ status: 403 });
  });

  it('takes the key from X-API-KEY, sent once', () => {
    expect(apiKeyOf({ 'x-api-key': 'k1', 'x-access-token': 'no' })).toBe('k1');
    expect(refusal(() => apiKeyOf({ 'x-access-token': 'k2' }))).toMatchObject({
      status: 401,
      message: expect.stringMatching(/^An API key is required/) as unknown,
    });
    expect(refusal(() => apiKeyOf({ 'x-api-key': ['a', 'b'] }))).toMatchObject({ status: 401 });
    expect(refusal(() => apiKeyOf({ 'x-api-key': '' }))).toMatchObject({ status: 401 });
  });

  it("reads the sandbox from an envd URL's host form, never a domain's dots", () => {
    expect(sandboxIdOfHost('49983-agent-3f2a.e2b.example.com')).toBe('agent-3f2a');
    expect(sandboxIdOfHost('49983-agent-3f2a.localhost:3000')).toBe('agent-3f2a');
    for (const host of [undefined, '', 'agent-3f2a.example.com', '8888-agent.example.com', '49983-.example.com', '49983-Agent.example.com'])
      expect(sandboxIdOfHost(host)).toBeUndefined();
  });
});
