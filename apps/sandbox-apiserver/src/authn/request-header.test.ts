import { X509Certificate } from 'node:crypto';
import { createCA, createLeaf, type CertPair } from '@sandbox-scale/e2e';
import { authenticationConfigOf, type AuthenticationConfig } from './auth-config';
import { authenticateRequestHeader, stripRemoteHeaders, type DistinctHeaders } from './request-header';

// Real certificates from a real CA: the checks under test are the chain, the usage and the name.
let proxyCa: CertPair;
let otherCa: CertPair;
let proxy: X509Certificate;
let stranger: X509Certificate;
let serverOnly: X509Certificate;
let fromOtherCa: X509Certificate;
let cas: X509Certificate[];

const x509 = (p: CertPair): X509Certificate => new X509Certificate(p.cert);

function config(extra: Record<string, string> = {}): AuthenticationConfig {
  return authenticationConfigOf({
    'requestheader-client-ca-file': proxyCa.cert,
    'requestheader-allowed-names': '["front-proxy-client"]',
    ...extra,
  });
}

beforeAll(async () => {
  proxyCa = await createCA('front-proxy-ca');
  otherCa = await createCA('other-ca');
  proxy = x509(await createLeaf(proxyCa, { commonName: 'front-proxy-client', client: true }));
  stranger = x509(await createLeaf(proxyCa, { commonName: 'someone-else', client: true }));
  serverOnly = x509(await createLeaf(proxyCa, { commonName: 'front-proxy-client', server: true }));
  fromOtherCa = x509(await createLeaf(otherCa, { commonName: 'front-proxy-client', client: true }));
  cas = [x509(proxyCa)];
}, 60_000);

describe('authenticateRequestHeader', () => {
  const headers: DistinctHeaders = { 'x-remote-user': ['alice'], 'x-remote-group': ['dev', 'ops'] };

  it('takes the identity from the X-Remote headers of an allowed front-proxy certificate', () => {
    expect(authenticateRequestHeader(proxy, headers, config(), cas)).toEqual({ username: 'alice', groups: ['dev', 'ops'], extra: {} });
  });

  it('fails closed: no certificate, no CA, another CA, a name not allowed, a certificate not for client auth', () => {
    expect(authenticateRequestHeader(undefined, headers, config(), cas)).toBeUndefined();
    expect(authenticateRequestHeader(proxy, headers, config(), [])).toBeUndefined();
    expect(authenticateRequestHeader(fromOtherCa, headers, config(), cas)).toBeUndefined();
    expect(authenticateRequestHeader(stranger, headers, config(), cas)).toBeUndefined();
    expect(authenticateRequestHeader(serverOnly, headers, config(), cas)).toBeUndefined();
  });

  it('accepts any name the CA signed when no allowed names are configured', () => {
    const open = authenticationConfigOf({ 'requestheader-client-ca-file': proxyCa.cert });
    expect(authenticateRequestHeader(stranger, headers, open, cas)).toMatchObject({ username: 'alice' });
  });

  it('is no one without a username, and takes the first configured username header that is set', () => {
    expect(authenticateRequestHeader(proxy, { 'x-remote-group': ['dev'] }, config(), cas)).toBeUndefined();
    expect(authenticateRequestHeader(proxy, { 'x-remote-user': [''] }, config(), cas)).toBeUndefined();
    const two = config({ 'requestheader-username-headers': '["X-Proxy-User","X-Remote-User"]' });
    expect(authenticateRequestHeader(proxy, { 'x-remote-user': ['bob'] }, two, cas)).toMatchObject({ username: 'bob' });
    expect(authenticateRequestHeader(proxy, { 'x-remote-user': ['bob'], 'x-proxy-user': ['carol'] }, two, cas)).toMatchObject({
      username: 'carol',
    });
  });

  it('reads the uid header when configured, and merges extra values per decoded, lower-cased key', () => {
    const cfg = config({ 'requestheader-uid-headers': '["X-Remote-Uid"]' });
    const u = authenticateRequestHeader(
      proxy,
      {
        'x-remote-user': ['alice'],
        'x-remote-uid': ['u-1'],
        'x-remote-extra-scopes': ['a', ''],
        'x-remote-extra-acme.com%2fteam': ['t1', 't2'],
      },
      cfg,
      cas,
    );
    expect(u).toEqual({ username: 'alice', uid: 'u-1', groups: [], extra: { scopes: ['a'], 'acme.com/team': ['t1', 't2'] } });
  });
});

describe('stripRemoteHeaders', () => {
  it('refuses an identity with an extra key that names a prototype, plain or percent-encoded, instead of failing on it', () => {
    for (const key of ['__proto__', 'constructor', 'prototype', '%5F%5Fproto%5F%5F', 'Constructor']) {
      const h: DistinctHeaders = {
        'x-remote-user': ['alice'],
        [`x-remote-extra-${key.toLowerCase()}`]: ['system:masters'],
        'x-remote-extra-scopes': ['a'],
      };
      expect({ key, user: authenticateRequestHeader(proxy, h, config(), cas) }).toEqual({ key, user: undefined });
    }
    expect(Object.keys(Object.prototype)).toEqual([]);
  });

  it('drops every header that could carry a front-proxy identity and keeps the rest', () => {
    const cfg = config({ 'requestheader-uid-headers': '["X-Remote-Uid"]' });
    const headers: NodeJS.Dict<string | string[]> = {
      'x-remote-user': 'mallory',
      'x-remote-group': ['system:masters'],
      'x-remote-uid': '0',
      'x-remote-extra-scopes': 'all',
      accept: 'application/json',
      authorization: 'Bearer t',
    };
    stripRemoteHeaders(headers, cfg);
    expect(headers).toEqual({ accept: 'application/json', authorization: 'Bearer t' });
  });
});
