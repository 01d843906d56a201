import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { closeKubeTransport, DelegatedAuth, isAuthUnavailable } from '@sandbox-scale/kube-runtime';
import { statusForError } from '@sandbox-scale/scale-core';
import { requestInfoOf } from '../http/request-info';
import { accessAttributesOf, SarAuthorizer } from './sar-authorizer';

const G = '/apis/agents.x-k8s.io/v1beta1';
const info = (method: string, path: string) => requestInfoOf(method, new URL(`https://localhost${path}`));

describe('accessAttributesOf', () => {
  it('asks about the sandbox the handler will act on: namespace, verb, resource, subresource and name', () => {
    expect(accessAttributesOf(info('POST', `${G}/namespaces/team-a/sandboxes/s1/fork`))).toEqual({
      resource: {
        namespace: 'team-a',
        verb: 'create',
        group: 'agents.x-k8s.io',
        version: 'v1beta1',
        resource: 'sandboxes',
        subresource: 'fork',
        name: 's1',
      },
    });
    expect(accessAttributesOf(info('DELETE', `${G}/namespaces/team-a/sandboxes/s1`))).toMatchObject({
      resource: { verb: 'delete', name: 's1', subresource: '' },
    });
    expect(accessAttributesOf(info('PATCH', `${G}/namespaces/team-a/sandboxes/s1`))).toMatchObject({
      resource: { verb: 'patch', name: 's1' },
    });
  });

  it('asks about a list or watch across namespaces at the cluster scope, naming a field-selected object', () => {
    expect(accessAttributesOf(info('GET', `${G}/sandboxes?watch=true`))).toMatchObject({
      resource: { namespace: '', verb: 'watch', name: '' },
    });
    expect(accessAttributesOf(info('GET', `${G}/namespaces/team-a/sandboxes?fieldSelector=metadata.name%3Ds1`))).toMatchObject({
      resource: { namespace: 'team-a', verb: 'list', name: 's1' },
    });
  });

  it('asks about paths outside the group as non-resource URLs', () => {
    expect(accessAttributesOf(info('GET', '/openapi/v3'))).toEqual({ nonResource: { path: '/openapi/v3', verb: 'get' } });
    expect(accessAttributesOf(info('GET', `${G}`))).toEqual({ nonResource: { path: G, verb: 'get' } });
  });
});

describe('SarAuthorizer', () => {
  // an API server that takes the connection and closes it: every review fails in transport
  let dead: Server;
  let kc: KubeConfig;

  beforeAll(async () => {
    dead = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => dead.listen(0, '127.0.0.1', resolve));
    kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: `https://127.0.0.1:${(dead.address() as AddressInfo).port}`, skipTLSVerify: true }],
      users: [{ name: 'u', token: 'not-a-real-token' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
  });
  afterAll(async () => {
    closeKubeTransport(kc);
    await new Promise((resolve) => dead.close(resolve));
  });

  it('fails closed with a 503 when the review cannot be made, and does not remember the failure', async () => {
    const authz = new SarAuthorizer(new DelegatedAuth(kc, { timeoutMs: 2_000 }));
    const user = { username: 'alice', groups: ['system:authenticated'], extra: {} };
    const request = info('GET', `${G}/namespaces/team-a/sandboxes/s1`);
    for (let i = 0; i < 2; i++) {
      const err = await authz.authorize(user, request).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isAuthUnavailable(err)).toBe(true);
      expect(statusForError(err)).toMatchObject({ code: 503, message: 'authorization is unavailable, retry later' });
    }
  });

  it('allows the always-allowed groups without asking', async () => {
    const authz = new SarAuthorizer(new DelegatedAuth(kc, { timeoutMs: 2_000, alwaysAllowGroups: ['system:masters'] }));
    await expect(
      authz.authorize({ username: 'admin', groups: ['system:masters'], extra: {} }, info('DELETE', `${G}/namespaces/a/sandboxes/s1`)),
    ).resolves.toEqual({ allowed: true, reason: '' });
  });
});
