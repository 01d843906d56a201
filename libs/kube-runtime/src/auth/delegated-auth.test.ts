import { KubeConfig } from '@kubernetes/client-node';
import { statusForError } from '@sandbox-scale/scale-core';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AuthUnavailableError, DelegatedAuth, decisionOfSar, isAuthUnavailable, sarSpecOf, userOfTokenReview } from './delegated-auth';

const user = { username: 'alice', uid: 'u1', groups: ['dev'], extra: { scopes: ['a'] } };

describe('userOfTokenReview', () => {
  const ok = { status: { authenticated: true, audiences: ['fast'], user: { username: 'alice', groups: ['dev'] } } };

  it('returns the user of an authenticated review', () => {
    expect(userOfTokenReview(ok, ['fast'])).toEqual({ username: 'alice', groups: ['dev'], extra: {} });
  });

  it('refuses a review that does not confirm one of the audiences asked for', () => {
    expect(userOfTokenReview({ status: { ...ok.status, audiences: ['other'] } }, ['fast'])).toBeUndefined();
    // an authenticator that ignores audiences answers none: the token was not checked for ours
    expect(userOfTokenReview({ status: { ...ok.status, audiences: undefined } }, ['fast'])).toBeUndefined();
    expect(userOfTokenReview({ status: { ...ok.status, audiences: undefined } }, [])).toEqual({
      username: 'alice',
      groups: ['dev'],
      extra: {},
    });
  });

  it('refuses unauthenticated reviews and users without a name', () => {
    expect(userOfTokenReview({ status: { authenticated: false, user: { username: 'alice' } } }, [])).toBeUndefined();
    expect(userOfTokenReview({ status: { authenticated: true, user: { username: '' } } }, [])).toBeUndefined();
    expect(userOfTokenReview({}, [])).toBeUndefined();
  });
});

describe('decisionOfSar', () => {
  it('allows only an explicit allow without a deny', () => {
    expect(decisionOfSar({ status: { allowed: true } })).toEqual({ allowed: true, reason: '' });
    expect(decisionOfSar({ status: { allowed: true, denied: true, reason: 'no' } })).toEqual({ allowed: false, reason: 'no' });
    expect(decisionOfSar({ status: {} }).allowed).toBe(false);
    expect(decisionOfSar({}).allowed).toBe(false);
  });
});

describe('review answers read nothing inherited', () => {
  // what a polluted process would hold: the keys a rejected token's answer leaves out
  const polluted = { authenticated: true, username: 'evil', groups: ['system:masters'], allowed: true };
  const proto = Object.prototype as Record<string, unknown>;

  afterEach(() => {
    for (const k of Object.keys(polluted)) delete proto[k];
  });

  it('a rejected token stays rejected and a denial stays denied, even with those keys on Object.prototype', () => {
    Object.assign(proto, polluted);
    // kube-apiserver's answer for a token it rejects, and for a question it does not allow
    expect(userOfTokenReview({ status: { user: {} } }, [])).toBeUndefined();
    expect(userOfTokenReview({ status: {} }, [])).toBeUndefined();
    expect(decisionOfSar({ status: {} })).toEqual({ allowed: false, reason: '' });
    expect(decisionOfSar({})).toEqual({ allowed: false, reason: '' });
  });
});

describe('sarSpecOf', () => {
  it('carries uid, groups and extra with resource or non-resource attributes', () => {
    expect(sarSpecOf(user, { nonResource: { path: '/apis', verb: 'get' } })).toEqual({
      user: 'alice',
      uid: 'u1',
      groups: ['dev'],
      extra: { scopes: ['a'] },
      nonResourceAttributes: { path: '/apis', verb: 'get' },
    });
    expect(sarSpecOf(user, { resource: { verb: 'create', group: 'g', resource: 'r', namespace: 'ns' } })).toMatchObject({
      resourceAttributes: { verb: 'create', group: 'g', resource: 'r', namespace: 'ns' },
    });
  });
});

describe('DelegatedAuth failures', () => {
  // A server that answers garbage, or never answers: the review must refuse, not hang or allow.
  let server: Server;
  let mode: 'garbage' | 'hang' | 'error' | 'review' = 'garbage';
  let reviews = 0;
  let kc: KubeConfig;
  beforeAll(async () => {
    server = createServer((req, res) => {
      if (mode === 'hang') return;
      if (mode === 'review') {
        // a TokenReview that knows one good token
        let body = '';
        req.on('data', (c: Buffer) => (body += c.toString()));
        req.on('end', () => {
          reviews++;
          const token = (JSON.parse(body) as { spec: { token: string } }).spec.token;
          const status = token === 'good' ? { authenticated: true, user: { username: 'alice' } } : { authenticated: false };
          res.writeHead(201, { 'Content-Type': 'application/json' }).end(JSON.stringify({ status }));
        });
        return;
      }
      if (mode === 'error') {
        res.writeHead(500, { 'Content-Type': 'application/json' }).end('{"kind":"Status","message":"etcd at 10.0.0.7:2379 is down"}');
        return;
      }
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"status":{"authenticated":"yes","allowed":"yes"}}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true }],
      users: [{ name: 'u' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('refuses with a generic 503 when the answer cannot be read, the server fails or the timeout passes', async () => {
    const auth = new DelegatedAuth(kc, { timeoutMs: 200 });
    for (const m of ['garbage', 'error', 'hang'] as const) {
      mode = m;
      const err = await auth.authenticateToken(`t-${m}`).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(AuthUnavailableError);
      expect(isAuthUnavailable(err)).toBe(true);
      const status = statusForError(err);
      expect(status).toMatchObject({ code: 503, reason: 'ServiceUnavailable', message: 'authentication is unavailable, retry later' });
      expect(JSON.stringify(status)).not.toContain('10.0.0.7');
      const denied = await auth.authorize(user, { nonResource: { path: '/', verb: 'get' } }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isAuthUnavailable(denied)).toBe(true);
    }
  });

  it('keeps a good token cached however many bad tokens flood the cache', async () => {
    mode = 'review';
    const auth = new DelegatedAuth(kc, { maxEntries: 5 });
    expect(await auth.authenticateToken('good')).toMatchObject({ username: 'alice' });
    const before = reviews;
    for (let i = 0; i < 50; i++) expect(await auth.authenticateToken(`bad-${i}`)).toBeUndefined();
    expect(reviews).toBe(before + 50);
    expect(await auth.authenticateToken('good')).toMatchObject({ username: 'alice' });
    expect(reviews).toBe(before + 50);
    // the bad ones are cached too, within the bound: the newest is answered without a review
    expect(await auth.authenticateToken('bad-49')).toBeUndefined();
    expect(reviews).toBe(before + 50);
  });

  it('ends a review when the caller aborts', async () => {
    mode = 'hang';
    const auth = new DelegatedAuth(kc, { timeoutMs: 60_000 });
    const ac = new AbortController();
    const pending = auth.authenticateToken('t-abort', ac.signal).then(
      () => undefined,
      (e: unknown) => e,
    );
    ac.abort();
    expect(isAuthUnavailable(await pending)).toBe(true);
  });

  it('allows the always-allowed groups without asking', async () => {
    mode = 'error';
    const auth = new DelegatedAuth(kc, { alwaysAllowGroups: ['system:masters'] });
    await expect(auth.authorize({ ...user, groups: ['system:masters'] }, { nonResource: { path: '/', verb: 'get' } })).resolves.toEqual({
      allowed: true,
      reason: '',
    });
    // a group that merely contains the name is someone else
    await expect(auth.authorize({ ...user, groups: ['x,system:masters'] }, { nonResource: { path: '/', verb: 'get' } })).rejects.toThrow(
      AuthUnavailableError,
    );
  });
});
