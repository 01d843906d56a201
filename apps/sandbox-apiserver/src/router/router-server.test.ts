import { createServer, request, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { eventually } from '@sandbox-scale/e2e';
import { createLogger, fixedPair, selfSignedCert } from '@sandbox-scale/kube-runtime';
import { Registry } from 'prom-client';
import { FakeGuest, FakeReviews, FakeSandboxes } from './router-fixture';
import { startRouter, type RouterConfig, type RunningRouter } from './router-server';

const TENANT_TOKEN = 'tenant-token-team-a';
const SANDBOX_TOKEN = 'sandbox-token-s1-0123456789';
const alice = { username: 'system:serviceaccount:team-a:alice', groups: [], extra: {} };
const BOB_TOKEN = 'tenant-token-team-b';
const bob = { username: 'system:serviceaccount:team-b:bob', groups: [], extra: {} };

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  rawHeaders: string[];
  body: string;
}

function call(
  url: string,
  o: { method?: string; path?: string; headers?: Record<string, string | string[]>; body?: string } = {},
): Promise<Reply> {
  return new Promise<Reply>((resolve, reject) => {
    const req = request(`${url}${o.path ?? '/echo'}`, { method: o.method ?? 'GET', headers: o.headers ?? {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks).toString() }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(o.body);
  });
}

/** A port free on `host` now (`port` itself when given and free): bound, read and let go. */
async function freePortOn(host: string, port = 0): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen(port, host, resolve);
  });
  const bound = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return bound;
}

const routed = (extra: Record<string, string> = {}): Record<string, string> => ({
  authorization: `Bearer ${TENANT_TOKEN}`,
  'x-sandbox-id': 's1',
  'x-sandbox-namespace': 'team-a',
  ...extra,
});

describe('the sandbox router', () => {
  let guest: FakeGuest;
  let sandboxes: FakeSandboxes;
  let reviews: FakeReviews;
  let router: RunningRouter;
  let logText = '';
  let ready = true;
  const registry = new Registry();

  async function start(extra: Partial<RouterConfig> = {}): Promise<RunningRouter> {
    const log = createLogger({
      name: 'router-test',
      level: 'debug',
      destination: new Writable({
        write(chunk: Buffer, _enc, cb) {
          logText += chunk.toString();
          cb();
        },
      }),
    });
    return startRouter({
      host: '127.0.0.1',
      port: 0,
      authentication: 'kubernetes',
      delegatedAuth: reviews,
      access: sandboxes,
      ready: () => ready,
      log,
      registry: new Registry(),
      ...extra,
    });
  }

  /**
   * A request the guest never answers, sent to `url` and waited on until the guest holds it (so
   * it holds its relay slot); `release` answers every held request and gives the first's reply.
   */
  async function holdOne(url: string, headers: Record<string, string>): Promise<{ release: () => Promise<Reply> }> {
    const hanging = call(url, { path: '/hang', headers: { ...headers, 'x-sandbox-timeout': '5' } });
    const before = guest.hanging.size;
    await eventually(() => expect(guest.hanging.size).toBeGreaterThan(before), { timeoutMs: 5_000, intervalMs: 10 });
    return {
      release: async () => {
        for (const r of guest.hanging) r.end('late');
        guest.hanging.clear();
        return hanging;
      },
    };
  }

  /** A refusal as the caller sees it: status, `{detail}` body and Retry-After. */
  const refusal = (r: Reply): unknown => ({ status: r.status, body: JSON.parse(r.body) as unknown, retry: r.headers['retry-after'] });

  beforeAll(async () => {
    guest = new FakeGuest();
    await guest.start();
    sandboxes = new FakeSandboxes();
    sandboxes.guestPorts.set(8888, guest.port);
    sandboxes.add('team-a', 's1', { node: 'node-1', id: 'sb_1', token: SANDBOX_TOKEN });
    sandboxes.add('team-a', 's2', { node: 'node-1', id: 'sb_2', token: 'fresh-token-s2', cachedToken: 'stale-token-s2' });
    reviews = new FakeReviews();
    reviews.tokens.set(TENANT_TOKEN, alice);
    for (const name of ['s1', 's2', 'gone']) reviews.grants.add(`${alice.username} create sandboxes/portforward team-a/${name}`);
    sandboxes.add('team-b', 't1', { node: 'node-1', id: 'sb_t1', token: 'sandbox-token-t1' });
    reviews.tokens.set(BOB_TOKEN, bob);
    reviews.grants.add(`${bob.username} create sandboxes/portforward team-b/t1`);
    router = await start({ registry });
  });

  afterAll(async () => {
    await router.stop();
    await guest.stop();
  });

  it('answers GET /healthz without a token', async () => {
    const r = await call(router.url, { path: '/healthz' });
    expect({ status: r.status, body: JSON.parse(r.body) as unknown }).toEqual({ status: 200, body: { status: 'ok' } });
  });

  it('relays any method and path with its body, and the guest sees neither the routing headers, the caller’s token nor the caller’s Host', async () => {
    const r = await call(router.url, {
      method: 'PATCH',
      path: '/echo?x=1',
      headers: routed({
        'x-sandbox-port': '8888',
        'x-sandbox-timeout': '30',
        'x-sandbox-pod-ip': '10.9.9.9',
        'content-type': 'text/plain',
        'x-app': 'kept',
      }),
      body: 'hello guest',
    });
    expect(r.status).toBe(201);
    expect(r.headers['set-cookie']).toEqual(['a=1', 'b=2']);
    expect(r.headers['x-guest']).toBe('yes');
    const seen = JSON.parse(r.body) as { method: string; url: string; rawHeaders: string[]; body: string };
    expect({ method: seen.method, url: seen.url, body: seen.body }).toEqual({ method: 'PATCH', url: '/echo?x=1', body: 'hello guest' });
    const names = seen.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
    expect(names.filter((n) => n.startsWith('x-sandbox-') || n === 'authorization')).toEqual([]);
    const header = (n: string): string | undefined =>
      seen.rawHeaders[seen.rawHeaders.findIndex((h, i) => i % 2 === 0 && h.toLowerCase() === n) + 1];
    expect(header('host')).toBe(`127.0.0.1:8888`);
    expect(header('x-app')).toBe('kept');
    expect(header('content-type')).toBe('text/plain');
  });

  it('streams a chunked body both ways', async () => {
    const r = await new Promise<Reply>((resolve, reject) => {
      const req = request(`${router.url}/echo`, { method: 'POST', headers: routed() }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, rawHeaders: res.rawHeaders, body }));
      });
      req.on('error', reject);
      for (let i = 0; i < 50; i++) req.write(`part-${i};`);
      req.end();
    });
    expect(r.status).toBe(201);
    const seen = JSON.parse(r.body) as { body: string };
    expect(seen.body).toBe(Array.from({ length: 50 }, (_, i) => `part-${i};`).join(''));
    const streamed = await call(router.url, { path: '/stream?n=40', headers: routed() });
    expect(streamed.body).toBe(Array.from({ length: 40 }, (_, i) => `chunk-${i};`).join(''));
  });

  it('answers 401 without a token, 403 for a sandbox the caller may not reach, 404 for one not served', async () => {
    const noToken = await call(router.url, { headers: { 'x-sandbox-id': 's1', 'x-sandbox-namespace': 'team-a' } });
    expect({ status: noToken.status, body: JSON.parse(noToken.body) as unknown, auth: noToken.headers['www-authenticate'] }).toEqual({
      status: 401,
      body: { detail: 'A bearer token is required: Authorization: Bearer <Kubernetes token>.' },
      auth: 'Bearer realm="sandbox-router"',
    });
    const badToken = await call(router.url, { headers: routed({ authorization: 'Bearer nope' }) });
    expect({ status: badToken.status, body: JSON.parse(badToken.body) as unknown }).toEqual({
      status: 401,
      body: { detail: 'The bearer token is not valid.' },
    });
    const otherNs = await call(router.url, { headers: routed({ 'x-sandbox-namespace': 'team-b' }) });
    expect(otherNs.status).toBe(403);
    expect((JSON.parse(otherNs.body) as { detail: string }).detail).toMatch(
      /^sandboxes\.agents\.x-k8s\.io "s1" is forbidden: User "system:serviceaccount:team-a:alice" cannot create resource "sandboxes\/portforward" in API group "agents\.x-k8s\.io" in the namespace "team-b"/,
    );
    const gone = await call(router.url, { headers: routed({ 'x-sandbox-id': 'gone' }) });
    expect({ status: gone.status, body: JSON.parse(gone.body) as unknown }).toEqual({
      status: 404,
      body: { detail: 'Sandbox "gone" not found in namespace "team-a".' },
    });
  });

  it('answers 400 for bad routing headers before anything else', async () => {
    const r = await call(router.url, { headers: routed({ 'x-sandbox-port': '70000' }) });
    expect({ status: r.status, body: JSON.parse(r.body) as unknown }).toEqual({
      status: 400,
      body: { detail: 'Invalid port format: X-Sandbox-Port must be an integer from 1 to 65535.' },
    });
    const noId = await call(router.url, { headers: { authorization: `Bearer ${TENANT_TOKEN}` } });
    expect({ status: noId.status, body: JSON.parse(noId.body) as unknown }).toEqual({
      status: 400,
      body: { detail: 'X-Sandbox-ID header is required.' },
    });
  });

  it('reads a token again once when the node answers 404 for the one it had', async () => {
    const r = await call(router.url, { headers: routed({ 'x-sandbox-id': 's2' }) });
    expect(r.status).toBe(201);
  });

  it('answers 502 naming the sandbox, and nothing the node said, when nothing listens on the guest port', async () => {
    const r = await call(router.url, { headers: routed({ 'x-sandbox-port': '9' }) });
    expect({ status: r.status, body: JSON.parse(r.body) as unknown }).toEqual({
      status: 502,
      body: { detail: 'Could not connect to the backend sandbox: s1' },
    });
  });

  it('answers 502 when the guest closes the connection without answering', async () => {
    const r = await call(router.url, { path: '/drop', headers: routed() });
    expect({ status: r.status, body: JSON.parse(r.body) as unknown }).toEqual({
      status: 502,
      body: { detail: 'Could not connect to the backend sandbox: s1' },
    });
  });

  it('answers 504 once X-Sandbox-Timeout passes without an answer from the guest', async () => {
    const r = await call(router.url, { path: '/hang', headers: routed({ 'x-sandbox-timeout': '0.2' }) });
    expect({ status: r.status, body: JSON.parse(r.body) as unknown }).toEqual({
      status: 504,
      body: { detail: 'Timed out waiting for the backend sandbox: s1' },
    });
  });

  it('answers 503 while the served sandboxes are not known yet', async () => {
    ready = false;
    try {
      const r = await call(router.url, { headers: routed() });
      expect({ status: r.status, retry: r.headers['retry-after'] }).toEqual({ status: 503, retry: '1' });
    } finally {
      ready = true;
    }
  });

  it('answers 503 past its relays in flight, and serves again once one ends', async () => {
    const small = await start({ maxRelays: 1 });
    try {
      // the hanging request holds the only slot once the guest has it
      const held = await holdOne(small.url, routed());
      expect(refusal(await call(small.url, { headers: routed() }))).toEqual({
        status: 503,
        body: { detail: 'Too many requests in flight, retry later.' },
        retry: '1',
      });
      expect((await held.release()).body).toBe('late');
      expect((await call(small.url, { headers: routed() })).status).toBe(201);
    } finally {
      await small.stop();
    }
  });

  it("answers 429 past one namespace's share of relays while another namespace is still served", async () => {
    const small = await start({ maxRelays: 8, maxRelaysPerNamespace: 1 });
    try {
      const held = await holdOne(small.url, routed());
      expect(refusal(await call(small.url, { headers: routed() }))).toEqual({
        status: 429,
        body: { detail: 'Too many requests in flight for namespace team-a, retry later.' },
        retry: '1',
      });
      // team-b has a share of its own
      const other = await call(small.url, {
        headers: { authorization: `Bearer ${BOB_TOKEN}`, 'x-sandbox-id': 't1', 'x-sandbox-namespace': 'team-b' },
      });
      expect(other.status).toBe(201);
      expect((await held.release()).body).toBe('late');
    } finally {
      await small.stop();
    }
  });

  it('gives no slot to callers it cannot authenticate, and closes their sockets even when they never close theirs', async () => {
    const small = await start({ maxRelays: 2 });
    try {
      // 40 upgrades with a made-up token, sent by clients that never close nor end their side
      const sockets = Array.from({ length: 40 }, () => connect({ host: '127.0.0.1', port: small.port, allowHalfOpen: true }));
      // once the answer has ended, the client pokes: a socket the router destroyed answers with a reset, and closes
      const closed = sockets.map(
        (socket) =>
          new Promise<void>((resolve) => {
            socket.once('close', () => resolve());
            socket.once('end', () => {
              const poke = setInterval(() => socket.write('x'), 20);
              socket.once('close', () => clearInterval(poke));
            });
          }),
      );
      for (const socket of sockets) {
        socket.on('error', () => undefined);
        socket.resume();
        socket.write(
          'GET /ws HTTP/1.1\r\nHost: router\r\nConnection: Upgrade\r\nUpgrade: echo\r\nAuthorization: Bearer made-up\r\nX-Sandbox-ID: s1\r\nX-Sandbox-Namespace: team-a\r\n\r\n',
        );
      }
      // the router destroys every refused socket itself: each closes though the client keeps it open
      await Promise.all(closed);
      // and none of them took a slot from the caller who is allowed
      expect((await call(small.url, { headers: routed() })).status).toBe(201);
    } finally {
      await small.stop();
    }
  });

  it('closes an upgraded relay that stays idle, and one that lives past its maximum', async () => {
    const open = async (r: RunningRouter): Promise<{ closedAfterMs: Promise<number>; socket: ReturnType<typeof connect> }> => {
      const socket = connect({ host: '127.0.0.1', port: r.port });
      const started = Date.now();
      const closedAfterMs = new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now() - started)));
      socket.on('error', () => undefined);
      await new Promise<void>((resolve) => {
        socket.once('data', () => resolve());
        socket.write(
          `GET /ws HTTP/1.1\r\nHost: router\r\nConnection: Upgrade\r\nUpgrade: echo\r\nAuthorization: Bearer ${TENANT_TOKEN}\r\nX-Sandbox-ID: s1\r\nX-Sandbox-Namespace: team-a\r\n\r\n`,
        );
      });
      return { closedAfterMs, socket };
    };
    const idle = await start({ relayIdleTimeoutMs: 300, relayMaxDurationMs: 60_000 });
    const busy = await start({ relayIdleTimeoutMs: 60_000, relayMaxDurationMs: 500 });
    try {
      // nothing is sent either way: only the idle bound ends it
      const a = await open(idle);
      expect(await a.closedAfterMs).toBeGreaterThan(0);
      // a relay kept busy below its idle time still ends at its maximum
      const b = await open(busy);
      const ping = setInterval(() => b.socket.write('x'), 50);
      // pinged every 50 ms, below its idle bound: only its maximum age ends it
      const after = await b.closedAfterMs;
      clearInterval(ping);
      expect(after).toBeGreaterThan(0);
    } finally {
      await idle.stop();
      await busy.stop();
    }
  });

  it('relays an upgrade and joins both connections', async () => {
    const socket = connect({ host: '127.0.0.1', port: router.port });
    const got = await new Promise<string>((resolve, reject) => {
      let text = '';
      socket.on('data', (c: Buffer) => {
        text += c.toString();
        if (text.includes('ping-pong')) resolve(text);
      });
      socket.on('error', reject);
      socket.write(
        `GET /ws HTTP/1.1\r\nHost: router\r\nConnection: Upgrade\r\nUpgrade: echo\r\nAuthorization: Bearer ${TENANT_TOKEN}\r\nX-Sandbox-ID: s1\r\nX-Sandbox-Namespace: team-a\r\n\r\nping-pong`,
      );
    });
    socket.destroy();
    expect(got.startsWith('HTTP/1.1 101 Switching Protocols\r\n')).toBe(true);
    expect(got).toMatch(/\r\nUpgrade: echo\r\n/);
    expect(got).toMatch(/\r\nX-Guest: yes\r\n/);
    expect(got.endsWith('\r\n\r\nping-pong')).toBe(true);
  });

  it('refuses an upgrade without a token in the same shape', async () => {
    const socket = connect({ host: '127.0.0.1', port: router.port });
    const got = await new Promise<string>((resolve, reject) => {
      let text = '';
      socket.on('data', (c: Buffer) => (text += c.toString()));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
      socket.write('GET /ws HTTP/1.1\r\nHost: router\r\nConnection: Upgrade\r\nUpgrade: echo\r\nX-Sandbox-ID: s1\r\n\r\n');
    });
    expect(got.split('\r\n')[0]).toBe('HTTP/1.1 401 Unauthorized');
    expect(got.endsWith('{"detail":"A bearer token is required: Authorization: Bearer <Kubernetes token>."}')).toBe(true);
  });

  it('counts answers by code, and never writes a token to a reply or a log line', async () => {
    const page = await registry.metrics();
    expect(page).toMatch(/^sandbox_scale_apiserver_router_requests_total\{code="201"\} [1-9]\d*$/m);
    expect(page).toMatch(/^sandbox_scale_apiserver_router_requests_total\{code="401"\} [1-9]\d*$/m);
    // the upgrade's slot is released once its connection has closed on the router's side too
    await eventually(async () => expect(await registry.metrics()).toMatch(/^sandbox_scale_apiserver_router_relays_in_flight 0$/m), {
      timeoutMs: 5_000,
      intervalMs: 10,
    });
    expect(logText).toMatch(/"msg":"relayed"/);
    for (const token of [SANDBOX_TOKEN, 'fresh-token-s2', 'stale-token-s2', TENANT_TOKEN])
      expect({ token, inLog: logText.includes(token) }).toEqual({ token, inLog: false });
  });

  it('answers 431 to headers past their bound and keeps serving', async () => {
    const r = await call(router.url, { headers: routed({ 'x-padding': 'p'.repeat(20 * 1024) }) });
    expect(r.status).toBe(431);
    expect((await call(router.url, { path: '/healthz' })).status).toBe(200);
  });

  it('serves HTTPS with the serving certificate when told to', async () => {
    const serving = await selfSignedCert({ commonName: 'router', dnsNames: ['localhost'], ips: ['127.0.0.1'] });
    const tls = await start({ tls: fixedPair(serving.cert, serving.key) });
    try {
      expect(tls.url.startsWith('https://127.0.0.1:')).toBe(true);
      const body = await new Promise<string>((resolve, reject) => {
        const req = httpsRequest(`${tls.url}/healthz`, { ca: serving.caBundle }, (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve(`${res.statusCode} ${text}`));
        });
        req.on('error', reject);
        req.end();
      });
      expect(body).toBe('200 {"status":"ok"}');
    } finally {
      await tls.stop();
    }
  });

  it('refuses to start with kubernetes authentication and nothing to authenticate with', async () => {
    await expect(start({ delegatedAuth: undefined })).rejects.toThrow('--router-authentication=kubernetes needs delegated authentication');
  });

  it('serves a tunnel listener without authentication on the loopback, beside the authenticated one on another address and the same port', async () => {
    logText = '';
    const port = await freePortOn('127.0.0.1');
    const both = await start({ host: '127.0.0.2', port, tunnel: { host: '127.0.0.1', port } });
    try {
      expect({ url: both.url, tunnelUrl: both.tunnelUrl }).toEqual({
        url: `http://127.0.0.2:${port}`,
        tunnelUrl: `http://127.0.0.1:${port}`,
      });
      const anonymous = { 'x-sandbox-id': 's1', 'x-sandbox-namespace': 'team-a' };
      const through = await call(both.tunnelUrl ?? '', { method: 'POST', headers: anonymous, body: 'no token' });
      expect({ status: through.status, body: (JSON.parse(through.body) as { body: string }).body }).toEqual({
        status: 201,
        body: 'no token',
      });
      const direct = await call(both.url, { headers: anonymous });
      expect({ status: direct.status, body: JSON.parse(direct.body) as unknown }).toEqual({
        status: 401,
        body: { detail: 'A bearer token is required: Authorization: Bearer <Kubernetes token>.' },
      });
      // the rest of the routing rules hold on the tunnel too
      const gone = await call(both.tunnelUrl ?? '', { headers: { ...anonymous, 'x-sandbox-id': 'gone' } });
      expect({ status: gone.status, body: JSON.parse(gone.body) as unknown }).toEqual({
        status: 404,
        body: { detail: 'Sandbox "gone" not found in namespace "team-a".' },
      });
      expect(logText).toMatch(/"listener":"router-tunnel".*"authentication":"none".*"msg":"router tunnel listening"/);
      expect(logText).toMatch(/"level":"warn".*"listener":"router-tunnel".*tunnel listener runs without authentication/);
      expect(logText).toMatch(/"listener":"router-tunnel".*"user":"system:anonymous".*"msg":"relayed"/);
    } finally {
      await both.stop();
    }
  });

  it('shares its relay slots between its listeners', async () => {
    const small = await start({ maxRelays: 1, tunnel: { host: '127.0.0.1', port: 0 } });
    try {
      const held = await holdOne(small.tunnelUrl ?? '', { 'x-sandbox-id': 's1', 'x-sandbox-namespace': 'team-a' });
      expect((await call(small.url, { headers: routed() })).status).toBe(503);
      expect((await held.release()).body).toBe('late');
      expect((await call(small.url, { headers: routed() })).status).toBe(201);
    } finally {
      await small.stop();
    }
  });

  it('fails to start, and holds no port, when the tunnel listener cannot listen', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const takenPort = (taken.address() as AddressInfo).port;
    const port = await freePortOn('127.0.0.2');
    try {
      await expect(start({ host: '127.0.0.2', port, tunnel: { host: '127.0.0.1', port: takenPort } })).rejects.toThrow(/EADDRINUSE/);
      // the authenticated listener was closed again: its port is free
      expect(await freePortOn('127.0.0.2', port)).toBe(port);
    } finally {
      await new Promise<void>((resolve) => taken.close(() => resolve()));
    }
  });

  it('runs open only when told to, and says so in its log', async () => {
    logText = '';
    const open = await start({ authentication: 'none', delegatedAuth: undefined });
    try {
      const r = await call(open.url, { headers: { 'x-sandbox-id': 's1', 'x-sandbox-namespace': 'team-a' } });
      expect(r.status).toBe(201);
      expect(logText).toMatch(/"level":"warn".*runs without authentication \(--router-authentication=none\)/);
    } finally {
      await open.stop();
    }
  });
});
