import { createCA, createLeaf, type CertPair } from '@sandbox-scale/e2e';
import { createServer, request, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { authenticationConfigOf, type AuthenticationConfig } from './auth-config';
import { acceptedCasOf, Authenticator } from './authenticator';

// A real TLS listener and client: header lines reach the authenticator exactly as Node parses them.
let frontProxyCa: CertPair;
let otherCa: CertPair;
let proxyClient: CertPair;
let strangerClient: CertPair;
let serving: CertPair;
let server: Server;
let cfg: AuthenticationConfig;

function configWith(ca: CertPair): AuthenticationConfig {
  return authenticationConfigOf({ 'requestheader-client-ca-file': ca.cert, 'requestheader-allowed-names': '["front-proxy-client"]' });
}

beforeAll(async () => {
  frontProxyCa = await createCA('fp-ca');
  otherCa = await createCA('other-ca');
  serving = await createLeaf(otherCa, { commonName: 'localhost', dnsNames: ['localhost'], ips: ['127.0.0.1'], server: true });
  proxyClient = await createLeaf(frontProxyCa, { commonName: 'front-proxy-client', client: true });
  strangerClient = await createLeaf(frontProxyCa, { commonName: 'someone-else', client: true });
  cfg = configWith(frontProxyCa);
  const authn = new Authenticator(() => cfg, undefined);
  server = createServer(
    { cert: serving.cert, key: serving.key, requestCert: true, rejectUnauthorized: false, ca: acceptedCasOf(cfg) },
    (req, res) => {
      void authn.authenticate(req).then((u) => res.end(JSON.stringify(u ?? null)));
    },
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  // five RSA key pairs: seconds on a loaded machine
}, 60_000);
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

function whoIs(headers: Record<string, string | string[]>, client?: CertPair): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: (server.address() as AddressInfo).port,
        path: '/',
        rejectUnauthorized: false,
        headers,
        ...(client ? { cert: client.cert, key: client.key } : {}),
      },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve(JSON.parse(body) as unknown));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('front-proxy authentication', () => {
  it('keeps a comma inside a group: x,system:masters stays one group, never system:masters', async () => {
    const u = await whoIs({ 'X-Remote-User': 'mallory', 'X-Remote-Group': 'x,system:masters' }, proxyClient);
    expect(u).toEqual({ username: 'mallory', groups: ['x,system:masters', 'system:authenticated'], extra: {} });
  });

  it('reads each X-Remote-Group line as one group and keeps commas in the user name', async () => {
    const u = await whoIs({ 'X-Remote-User': 'a,b', 'X-Remote-Group': ['dev', 'ops,system:masters'] }, proxyClient);
    expect(u).toEqual({ username: 'a,b', groups: ['dev', 'ops,system:masters', 'system:authenticated'], extra: {} });
  });

  it('reads each X-Remote-Extra line as one value and decodes the key, keeping one that does not decode', async () => {
    const u = await whoIs(
      {
        'X-Remote-User': 'mallory',
        'X-Remote-Extra-Scopes': ['a,b', 'c'],
        'X-Remote-Extra-Acme.com%2fproject': 'p1',
        'X-Remote-Extra-Bad%zz': 'v',
      },
      proxyClient,
    );
    expect(u).toEqual({
      username: 'mallory',
      groups: ['system:authenticated'],
      extra: { scopes: ['a,b', 'c'], 'acme.com/project': ['p1'], 'bad%zz': ['v'] },
    });
  });

  it('ignores identity headers without a certificate, from a name not allowed, or from another CA', async () => {
    const headers = { 'X-Remote-User': 'admin', 'X-Remote-Group': 'system:masters' };
    expect(await whoIs(headers)).toBeNull();
    expect(await whoIs(headers, strangerClient)).toBeNull();
    expect(await whoIs(headers, await createLeaf(otherCa, { commonName: 'front-proxy-client', client: true }))).toBeNull();
  });

  it('judges each request by the config of now', async () => {
    const headers = { 'X-Remote-User': 'alice' };
    const before = cfg;
    try {
      cfg = configWith(otherCa);
      expect(await whoIs(headers, proxyClient)).toBeNull();
    } finally {
      cfg = before;
    }
    expect(await whoIs(headers, proxyClient)).toMatchObject({ username: 'alice' });
  });
});
