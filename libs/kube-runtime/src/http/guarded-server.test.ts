import { createServer, request, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { captureLog } from '../testing/capture-log';
import { ProbeServer } from '../health/probe-server';
import { closeServer, decodeSegment, guardRequests, limitServer, readBounded, requestUrl } from './guarded-server';

function get(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Sends raw bytes and returns whatever comes back before the server closes the connection. */
function raw(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(text));
    let reply = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => (reply += c));
    socket.on('close', () => resolve(reply));
    socket.on('error', reject);
  });
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

describe('guardRequests', () => {
  const { log, lines } = captureLog();
  const server = createServer(
    guardRequests(
      (req, res) => {
        if (req.url === '/throw') throw new Error('secret detail: http://10.1.2.3/');
        if (req.url === '/reject') return Promise.reject(new Error('secret detail: rejected'));
        if (req.url === '/midway') {
          res.writeHead(200);
          res.write('partial');
          return Promise.reject(new Error('failed after the headers'));
        }
        res.end('fine');
        return undefined;
      },
      { log },
    ),
  );
  let port = 0;
  beforeAll(async () => {
    port = await listen(server);
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('answers a handler that throws or rejects with a generic 500, logs the error and keeps serving', async () => {
    for (const path of ['/throw', '/reject']) {
      const r = await get(port, path);
      expect(r.status).toBe(500);
      expect(r.body).not.toContain('secret');
      expect((await get(port, '/')).body).toBe('fine');
    }
    const logged = lines.filter((l) => l.msg === 'request failed unexpectedly');
    expect(logged.map((l) => l.path)).toEqual(['/throw', '/reject']);
    expect(JSON.stringify(logged)).toContain('secret detail');
  });

  it('closes a response that failed after its headers went out', async () => {
    await expect(get(port, '/midway')).rejects.toThrow();
    expect((await get(port, '/')).body).toBe('fine');
  });
});

describe('requestUrl and decodeSegment', () => {
  it('keeps an origin-form path as sent, takes path and query of an absolute form, refuses the rest', () => {
    expect(requestUrl('//evil.example/x?y=1', 'https://localhost')?.href).toBe('https://localhost//evil.example/x?y=1');
    expect(requestUrl('http://other:9/a/b?c=d', 'https://localhost')?.href).toBe('https://localhost/a/b?c=d');
    expect(requestUrl('/%zz', 'https://localhost')?.pathname).toBe('/%zz');
    expect(requestUrl('*', 'https://localhost')).toBeUndefined();
    expect(requestUrl('http://[zz/', 'https://localhost')).toBeUndefined();
  });

  it('answers undefined for malformed percent-encoding', () => {
    expect(decodeSegment('%zz')).toBeUndefined();
    expect(decodeSegment('%E0%A4%A')).toBeUndefined();
    expect(decodeSegment('a%2Fb')).toBe('a/b');
  });
});

describe('limitServer', () => {
  it('sets header and request deadlines, the header one never past the request one', () => {
    const server = createServer();
    limitServer(server, { headersTimeoutMs: 90_000, requestTimeoutMs: 20_000 });
    expect(server.requestTimeout).toBe(20_000);
    expect(server.headersTimeout).toBe(20_000);
    expect(server.maxHeadersCount).toBe(200);
    expect(server.maxConnections).toBe(10_000);
  });

  it('closes a connection past maxConnections as it arrives, and serves another caller once one ends', async () => {
    const server = createServer((_req, res) => res.end('ok'));
    limitServer(server, { maxConnections: 3 });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const port = (server.address() as AddressInfo).port;
    const held = await Promise.all(
      [0, 1, 2].map(
        () =>
          new Promise<ReturnType<typeof connect>>((resolve, reject) => {
            const s = connect(port, '127.0.0.1', () => resolve(s));
            s.on('error', reject);
          }),
      ),
    );
    // a reset counts as closed: what matters is that no answer came
    const attempt = (text: string): Promise<string> => raw(port, text).catch(() => '');
    try {
      // the fourth is closed by the server before it can be answered
      const extra = await attempt('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      expect(extra).toBe('');
      held[0]?.destroy();
      // the slot comes back once the server has seen the close
      let answer = '';
      for (let i = 0; i < 50 && !answer.startsWith('HTTP/1.1 200'); i++)
        answer = await attempt('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      expect(answer.startsWith('HTTP/1.1 200')).toBe(true);
    } finally {
      for (const s of held) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe('ProbeServer under hostile requests', () => {
  const { log } = captureLog();
  const probe = new ProbeServer({ log });
  let port = 0;
  beforeAll(async () => {
    port = (await probe.listen({ host: '127.0.0.1', port: 0 })).port;
  });
  afterAll(() => probe.close());

  it.each([
    [
      'a malformed absolute-form target',
      'GET http://[zz/healthz HTTP/1.1\r\nHost: x\r\n\r\n',
      /^HTTP\/1\.1 400[\s\S]*malformed request target/,
    ],
    ['an asterisk target', 'OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n', /^HTTP\/1\.1 4\d\d/],
    ['an unknown method', 'BREW /healthz HTTP/1.1\r\nHost: x\r\n\r\n', /^HTTP\/1\.1 4\d\d/],
    ['oversized headers', `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, /^HTTP\/1\.1 431/],
    ['a broken request line', 'GET /healthz HTTP/9\r\n\r\n', /^HTTP\/1\.1 400/],
  ])('answers %s with a 4xx and keeps serving', async (_what, text, expected) => {
    expect(await raw(port, text)).toMatch(expected);
    expect((await get(port, '/healthz')).status).toBe(200);
  });
});

describe('readBounded', () => {
  it('reads a body over its limit to the end, so the kept-alive connection serves the next request', async () => {
    const { log } = captureLog();
    const server = createServer(
      guardRequests(
        async (req, res) => {
          const body = await readBounded(req, 64 * 1024);
          const [code, text] = body === undefined ? [400, 'too large'] : [200, String(body.length)];
          res.writeHead(code, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(text) });
          res.end(text);
        },
        { log },
      ),
    );
    // the deadline that would otherwise free a stuck connection is far past this test's timeout
    limitServer(server, { requestTimeoutMs: 120_000, headersTimeoutMs: 60_000 });
    const port = await listen(server);
    const { Agent } = await import('node:http');
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const post = (body: Buffer): Promise<{ status: number; text: string; reused: boolean }> =>
      new Promise((resolve, reject) => {
        const req = request(
          { host: '127.0.0.1', port, path: '/', method: 'POST', agent, headers: { 'content-length': body.length } },
          (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (c: string) => (text += c));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, text, reused: req.reusedSocket }));
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    try {
      expect(await post(Buffer.alloc(1024 * 1024, 0x61))).toEqual({ status: 400, text: 'too large', reused: false });
      expect(await post(Buffer.from('{}'))).toEqual({ status: 200, text: '2', reused: true });
      expect(await post(Buffer.alloc(1024 * 1024, 0x61))).toEqual({ status: 400, text: 'too large', reused: true });
      expect(await post(Buffer.alloc(64 * 1024, 0x61))).toEqual({ status: 200, text: String(64 * 1024), reused: true });
    } finally {
      agent.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }, 20_000);
});

describe('closeServer', () => {
  it('ends a TLS server at once, a client that never finishes its handshake included', async () => {
    const { createServer: createHttpsServer } = await import('node:https');
    const { selfSignedCert } = await import('./self-signed-cert');
    const tls = await selfSignedCert({ commonName: 'localhost', dnsNames: ['localhost'] });
    const server = createHttpsServer({ cert: tls.cert, key: tls.key }, (_req, res) => res.end('ok'));
    limitServer(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    // a TCP connection that sends nothing: still in its handshake, unknown to closeAllConnections
    const silent = connect((server.address() as AddressInfo).port, '127.0.0.1');
    await new Promise<void>((r) => silent.once('connect', r));
    const closedSilent = new Promise<void>((r) => silent.once('close', () => r()));
    silent.on('error', () => undefined);
    // a close that waited for the handshake would wait its 120 s timeout, far past this test's
    await closeServer(server);
    await closedSilent;
    expect(server.listening).toBe(false);
  });
});
