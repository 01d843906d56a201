import { Agent, createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { postJson, type PostFailure } from './post-json';
import { selfSignedCert } from './self-signed-cert';

class CallFailed extends Error {
  readonly why: string;
  constructor(failure: PostFailure) {
    super(failure.message, { cause: failure.cause });
    this.why = failure.why;
  }
}

describe('postJson', () => {
  let server: Server;
  let agent: Agent;
  let url: string;
  const seen: { auth?: string; body?: string }[] = [];

  beforeAll(async () => {
    const cert = await selfSignedCert({ commonName: 'localhost', dnsNames: ['localhost'], ips: ['127.0.0.1'] });
    server = createServer({ cert: cert.cert, key: cert.key }, (req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString('utf8')));
      req.on('end', () => {
        seen.push({ auth: req.headers.authorization, body });
        if (req.url === '/big') res.end('x'.repeat(4096));
        else if (req.url === '/silent') return;
        else res.writeHead(201, { 'Content-Type': 'application/json' }).end('{"ok":true}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
    agent = new Agent({ keepAlive: true, ca: cert.caBundle });
  });

  afterAll(async () => {
    agent.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const opts = (timeoutMs = 5_000) => ({
    agent,
    authorization: 'Bearer t0ken',
    timeoutMs,
    maxReplyBytes: 1024,
    peer: 'peer test',
    fail: (failure: PostFailure) => new CallFailed(failure),
  });

  it('sends the body and the credential, and answers the status and text', async () => {
    await expect(postJson(`${url}/ok`, { a: 1 }, opts())).resolves.toEqual({ code: 201, text: '{"ok":true}' });
    expect(seen.at(-1)).toEqual({ auth: 'Bearer t0ken', body: '{"a":1}' });
  });

  it('ends a reply past its cap, and a peer that never answers, with the caller error', async () => {
    await expect(postJson(`${url}/big`, {}, opts())).rejects.toMatchObject({
      why: 'too-large',
      message: 'peer test answered more than 1024 bytes',
    });
    await expect(postJson(`${url}/silent`, {}, opts(200))).rejects.toMatchObject({
      why: 'timeout',
      message: 'peer test did not answer within 200 ms',
    });
    await expect(postJson('https://127.0.0.1:1/x', {}, opts())).rejects.toMatchObject({
      why: 'transport',
      message: expect.stringMatching(/^peer test: .*ECONNREFUSED/) as unknown,
    });
  });
});
