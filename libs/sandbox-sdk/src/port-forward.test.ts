import { once } from 'node:events';
import * as http from 'node:http';
import * as net from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { isInvalidArgument, isNotFound } from './errors';
import { listenForward, type PortForward } from './port-forward';
import { openUpgrade } from './upgrade';

// The forward's transport against a loopback stand-in for kube-apiserver: an HTTP server that
// answers the upgrade with 101 and relays to a TCP "guest" server, as the portforward
// subresource does, and, as kube-apiserver's upgrade proxy does, closes both directions as soon
// as either one ends. What is checked is what crosses the wire.

interface Seen {
  method: string;
  url: string;
  upgrade: string;
  authorization: string;
  contentLength: string;
}

let guest: net.Server;
let api: http.Server;
let kc: KubeConfig;
let seen: Seen[];
let forward: PortForward | undefined;
/** Bytes the stand-in sends in the same packet as its 101. */
let greeting = '';
/** What the guest sends as soon as a client connects, closing right after; '' answers a request instead. */
let banner = '';

const target = { verb: 'create', resource: 'sandboxes/portforward', namespace: 'team', name: 'sb' };
const PATH = '/apis/agents.x-k8s.io/v1beta1/namespaces/team/sandboxes/sb/portforward';

function portOf(s: net.Server): number {
  const a = s.address();
  if (typeof a !== 'object' || a === null) throw new Error('not listening');
  return a.port;
}

beforeEach(async () => {
  seen = [];
  greeting = '';
  banner = '';
  // the guest answers a request and closes, or with a banner and closes at once
  guest = net.createServer({ allowHalfOpen: true }, (s) => {
    s.on('error', () => s.destroy());
    if (banner) s.end(banner);
    else s.once('data', (c: Buffer) => setImmediate(() => s.end(`pong:${c.toString()}`)));
  });
  guest.listen(0, '127.0.0.1');
  await once(guest, 'listening');
  api = http.createServer((_req, res) => res.writeHead(426).end());
  api.on('upgrade', (req: http.IncomingMessage, socket: net.Socket, head: Buffer) => {
    const url = new URL(req.url ?? '', 'http://x');
    seen.push({
      method: req.method ?? '',
      url: req.url ?? '',
      upgrade: req.headers.upgrade ?? '',
      authorization: req.headers.authorization ?? '',
      contentLength: req.headers['content-length'] ?? '',
    });
    if (url.pathname !== PATH || url.searchParams.get('port') !== '8080') {
      const body = JSON.stringify({ kind: 'Status', code: 404, reason: 'NotFound', message: 'sandbox "sb" has no port 9' });
      socket.end(`HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      return;
    }
    const g = net.connect({ port: portOf(guest), host: '127.0.0.1', allowHalfOpen: true }, () => {
      socket.write(`HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n${greeting}`);
      if (head.length > 0) g.write(head);
      // kube-apiserver's proxy: when either copy finishes, both connections are closed
      socket.pipe(g, { end: false });
      g.pipe(socket, { end: false });
      socket.once('end', () => {
        g.destroy();
        socket.destroy();
      });
      g.once('end', () => socket.end(() => g.destroy()));
    });
    socket.on('error', () => g.destroy());
    g.on('error', () => socket.destroy());
  });
  api.listen(0, '127.0.0.1');
  await once(api, 'listening');
  kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: `http://127.0.0.1:${portOf(api)}`, skipTLSVerify: true }],
    users: [{ name: 'u', token: 'user-token' }],
    contexts: [{ name: 'ctx', cluster: 'c', user: 'u' }],
    currentContext: 'ctx',
  });
});

afterEach(async () => {
  await forward?.close();
  forward = undefined;
  api.closeAllConnections();
  await new Promise((r) => api.close(r));
  await new Promise((r) => guest.close(r));
});

const dialPort = (port: number) => (signal: AbortSignal) =>
  openUpgrade(kc, { path: PATH, query: { port }, protocol: 'tcp', signal }, target);

/** Connects to the forward, sends `text`, half-closes, and reads everything until the far side ends. */
async function exchange(port: number, text: string): Promise<string> {
  const c = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  await once(c, 'connect');
  c.end(text);
  const got: Buffer[] = [];
  for await (const chunk of c as AsyncIterable<Buffer>) got.push(chunk);
  return Buffer.concat(got).toString();
}

describe('listenForward over an upgrade', () => {
  it('relays a request sent with a half-close and its answer, one upgrade per connection, with the user credentials and no body', async () => {
    forward = await listenForward(dialPort(8080));
    expect(forward.address).toBe(`127.0.0.1:${forward.localPort}`);
    expect(await exchange(forward.localPort, 'ping')).toBe('pong:ping');
    expect(await exchange(forward.localPort, 'again')).toBe('pong:again');
    expect(seen).toEqual([
      { method: 'POST', url: `${PATH}?port=8080`, upgrade: 'tcp', authorization: 'Bearer user-token', contentLength: '0' },
      { method: 'POST', url: `${PATH}?port=8080`, upgrade: 'tcp', authorization: 'Bearer user-token', contentLength: '0' },
    ]);
  });

  it("passes the sandbox side's EOF on to a client that sent nothing", async () => {
    banner = 'banner\n';
    forward = await listenForward(dialPort(8080));
    const c = net.connect({ port: forward.localPort, host: '127.0.0.1' });
    const got: Buffer[] = [];
    for await (const chunk of c as AsyncIterable<Buffer>) got.push(chunk);
    expect(Buffer.concat(got).toString()).toBe('banner\n');
  });

  it('delivers bytes that came in the same packet as the 101', async () => {
    greeting = 'early:';
    forward = await listenForward(dialPort(8080));
    expect(await exchange(forward.localPort, 'x')).toBe('early:pong:x');
  });

  it('resets a connection whose upgrade is refused, reports the Status, and goes on listening', async () => {
    const errors: unknown[] = [];
    forward = await listenForward(dialPort(9), { onConnectionError: (e) => errors.push(e) });
    const c = net.connect({ port: forward.localPort, host: '127.0.0.1' });
    const [err] = (await once(c, 'error')) as [NodeJS.ErrnoException];
    expect(err.code).toBe('ECONNRESET');
    expect(errors).toHaveLength(1);
    expect(isNotFound(errors[0])).toBe(true);
    expect((errors[0] as Error).message).toBe(
      'not found: create sandboxes/portforward "sb" in namespace "team": sandbox "sb" has no port 9',
    );
  });

  it('stops listening on close() and on the signal', async () => {
    forward = await listenForward(dialPort(8080));
    const port = forward.localPort;
    await forward.close();
    const refused = net.connect({ port, host: '127.0.0.1' });
    expect(((await once(refused, 'error')) as [NodeJS.ErrnoException])[0].code).toBe('ECONNREFUSED');

    const stop = new AbortController();
    forward = await listenForward(dialPort(8080), { signal: stop.signal });
    stop.abort();
    await forward.closed;
    const again = net.connect({ port: forward.localPort, host: '127.0.0.1' });
    expect(((await once(again, 'error')) as [NodeJS.ErrnoException])[0].code).toBe('ECONNREFUSED');
  });

  it('refuses a local port out of range before listening', async () => {
    const err: unknown = await listenForward(dialPort(8080), { localPort: 70000 }).catch((e: unknown) => e);
    expect(isInvalidArgument(err)).toBe(true);
  });
});
