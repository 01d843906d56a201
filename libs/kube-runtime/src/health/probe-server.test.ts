import { Counter, Registry } from 'prom-client';
import { Agent, request } from 'undici';
import { type MetricsAuthenticator, ProbeServer } from './probe-server';
import { BindAddressError, parseBindAddress } from './bind-address';
import { captureLog } from '../testing/capture-log';
import { AuthUnavailableError, type AccessAttributes, type UserInfo } from '../auth/delegated-auth';
import { fixedPair } from '../certs/watched-files';
import { selfSignedCert } from '../http/self-signed-cert';

describe('ProbeServer', () => {
  let server: ProbeServer;
  let base: string;
  let synced = false;

  beforeAll(async () => {
    const registry = new Registry();
    new Counter({ name: 'sandbox_scale_test_total', help: 'x', registers: [registry] }).inc(3);
    server = new ProbeServer({ log: captureLog().log, registry });
    server.addHealthzCheck('ping', () => true);
    server.addReadyzCheck('informer:sandboxwarmpools', () => synced);
    server.addReadyzCheck('leader', async () => undefined);
    const a = await server.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${a.port}`;
  });
  afterAll(() => server.close());

  it('answers /healthz ok', async () => {
    const r = await fetch(`${base}/healthz`);
    expect(r.status).toBe(200);
    expect(await r.text()).toBe('ok');
  });

  it('answers /readyz 503 naming the failing check, then 200 once it passes', async () => {
    synced = false;
    const r = await fetch(`${base}/readyz`);
    expect(r.status).toBe(503);
    const body = await r.text();
    expect(body).toContain('[-]informer:sandboxwarmpools failed');
    expect(body).not.toContain('leader');
    synced = true;
    const ok = await fetch(`${base}/readyz?verbose`);
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('[+]informer:sandboxwarmpools ok');
  });

  it('serves the registry on /metrics', async () => {
    const r = await fetch(`${base}/metrics`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toContain('text/plain');
    expect(await r.text()).toContain('sandbox_scale_test_total 3');
  });

  it('answers 404 elsewhere', async () => {
    expect((await fetch(`${base}/nope`)).status).toBe(404);
  });

  it('a sibling without a registry (the probe port) answers the same checks and no /metrics', async () => {
    const probes = server.sibling({});
    const a = await probes.listen({ host: '127.0.0.1', port: 0 });
    try {
      expect((await fetch(`http://127.0.0.1:${a.port}/healthz`)).status).toBe(200);
      const m = await fetch(`http://127.0.0.1:${a.port}/metrics`);
      expect(m.status).toBe(404);
      expect(await m.text()).not.toContain('sandbox_scale_test_total');
    } finally {
      await probes.close();
    }
  });
});

/** Tokens it knows: `reader` may get /metrics, `tenant` authenticates but may not, `down` finds the API server away. */
class FakeAuth implements MetricsAuthenticator {
  readonly asked: { user: string; attrs: AccessAttributes }[] = [];
  private readonly users: Record<string, UserInfo> = {
    reader: { username: 'system:serviceaccount:mon:prometheus', groups: ['system:serviceaccounts'], extra: {} },
    tenant: { username: 'system:serviceaccount:team-a:agent', groups: ['system:serviceaccounts'], extra: {} },
  };

  async authenticateToken(token: string): Promise<UserInfo | undefined> {
    if (token === 'down') throw new AuthUnavailableError('authentication', new Error('connect ECONNREFUSED'));
    return this.users[token];
  }

  async authorize(user: UserInfo, attrs: AccessAttributes): Promise<{ allowed: boolean; reason: string }> {
    this.asked.push({ user: user.username, attrs });
    return user.username.endsWith(':prometheus') ? { allowed: true, reason: '' } : { allowed: false, reason: 'no RBAC policy matched' };
  }
}

describe('ProbeServer with delegated metrics auth', () => {
  let server: ProbeServer;
  let base: string;
  let dispatcher: Agent;
  const auth = new FakeAuth();

  beforeAll(async () => {
    const registry = new Registry();
    new Counter({ name: 'sandbox_scale_guarded_total', help: 'x', registers: [registry] }).inc(2);
    const tls = await selfSignedCert({ commonName: 'localhost', dnsNames: ['localhost'], ips: ['127.0.0.1'] });
    server = new ProbeServer({ log: captureLog().log, registry, metricsAuth: auth, tls: fixedPair(tls.cert, tls.key) });
    server.addHealthzCheck('ping', () => true);
    const a = await server.listen({ host: '127.0.0.1', port: 0 });
    base = `https://127.0.0.1:${a.port}`;
    // the certificate is checked: the listener really is HTTPS with the certificate it was given
    dispatcher = new Agent({ connect: { ca: tls.caBundle, servername: 'localhost' } });
  });
  afterAll(async () => {
    await dispatcher.close();
    await server.close();
  });

  async function get(path: string, token?: string): Promise<{ status: number; body: string }> {
    const r = await request(`${base}${path}`, { dispatcher, headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });
    return { status: r.statusCode, body: await r.body.text() };
  }

  it('answers the probes without a token', async () => {
    expect(await get('/healthz')).toEqual({ status: 200, body: 'ok' });
    expect((await get('/readyz')).status).toBe(200);
  });

  it('answers /metrics 401 without a token or with one that does not authenticate, as a Status', async () => {
    for (const token of [undefined, '', 'nobody']) {
      const r = await get('/metrics', token);
      expect({ token, status: r.status }).toEqual({ token, status: 401 });
      expect(JSON.parse(r.body)).toMatchObject({ kind: 'Status', code: 401, reason: 'Unauthorized' });
    }
    const basic = await request(`${base}/metrics`, { dispatcher, headers: { authorization: 'Basic cmVhZGVyOg==' } });
    expect(basic.statusCode).toBe(401);
    await basic.body.text();
  });

  it('answers 403 naming the user and the path when RBAC does not allow get on /metrics', async () => {
    const r = await get('/metrics', 'tenant');
    expect(r.status).toBe(403);
    expect(JSON.parse(r.body)).toMatchObject({
      kind: 'Status',
      code: 403,
      reason: 'Forbidden',
      message: 'forbidden: User "system:serviceaccount:team-a:agent" cannot get path "/metrics": no RBAC policy matched',
    });
    expect(r.body).not.toContain('sandbox_scale_guarded_total');
  });

  it('serves the registry to a caller allowed get on the non-resource URL /metrics', async () => {
    const r = await get('/metrics', 'reader');
    expect(r.status).toBe(200);
    expect(r.body).toContain('sandbox_scale_guarded_total 2');
    expect(auth.asked.find((a) => a.user.endsWith(':prometheus'))?.attrs).toEqual({ nonResource: { path: '/metrics', verb: 'get' } });
  });

  it('answers 503 with Retry-After when the review cannot be made, letting nobody in', async () => {
    const r = await request(`${base}/metrics`, { dispatcher, headers: { authorization: 'Bearer down' } });
    const body = await r.body.text();
    expect(r.statusCode).toBe(503);
    expect(r.headers['retry-after']).toBe('1');
    expect(JSON.parse(body)).toMatchObject({ kind: 'Status', code: 503, reason: 'ServiceUnavailable' });
  });

  it('does not speak plain HTTP', async () => {
    await expect(fetch(`${base.replace('https:', 'http:')}/healthz`)).rejects.toThrow();
  });
});

describe('parseBindAddress', () => {
  it.each([
    [':8080', { host: '', port: 8080 }],
    ['127.0.0.1:9', { host: '127.0.0.1', port: 9 }],
    ['[::1]:8081', { host: '::1', port: 8081 }],
    ['0', undefined],
  ])('%s', (input, expected) => {
    expect(parseBindAddress(input)).toEqual(expected);
  });
  it('rejects garbage', () => {
    expect(() => parseBindAddress('8080')).toThrow(BindAddressError);
    expect(() => parseBindAddress(':99999')).toThrow(/not host:port/);
  });
});
