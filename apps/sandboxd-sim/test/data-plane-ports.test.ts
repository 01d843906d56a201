import { request as httpRequest } from 'node:http';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { asSandboxdHttpError } from '@sandbox-scale/sandboxd-client';
import { ManualClock } from '../src';
import { caught, eventually, raw, startDataSim, type DataSim } from './helpers';

const statusOf = (err: unknown): number | undefined => asSandboxdHttpError(err)?.statusCode;

interface HttpResult {
  status: number;
  body: Buffer;
}

/** One HTTP request over an already-open (relayed) socket. */
function httpOver(socket: Socket, method: string, path: string, body?: Buffer, headers: Record<string, string> = {}): Promise<HttpResult> {
  return new Promise<HttpResult>((resolve, reject) => {
    const req = httpRequest({ method, path, host: 'guest', headers: { ...headers, connection: 'close' }, createConnection: () => socket });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const json = (r: HttpResult): unknown => JSON.parse(r.body.toString('utf8'));

function readToEnd(socket: Socket): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let text = '';
    socket.on('data', (d: Buffer) => (text += d.toString()));
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
  });
}

async function listenOnce(handler: (s: Socket) => void): Promise<{ server: Server; port: number }> {
  const server = createServer({ allowHalfOpen: true }, handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port };
}

function multipart(path: string, data: Buffer): { body: Buffer; type: string } {
  const boundary = 'simtestboundary1234';
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${path}"\r\nContent-Type: application/octet-stream\r\n\r\n`;
  return {
    body: Buffer.concat([Buffer.from(head), data, Buffer.from(`\r\n--${boundary}--\r\n`)]),
    type: `multipart/form-data; boundary=${boundary}`,
  };
}

describe('GET /v1/sandboxes/{id}/ports/{port}', () => {
  let t: DataSim;
  let sb: { id: string; token: string };
  const open = (port: number) => t.root().openPort(sb.id, sb.token, port);

  beforeAll(async () => {
    t = await startDataSim();
    sb = await t.claim();
  });
  afterAll(() => t.close());

  /** A free port on the host, let go again. */
  const freePort = async (): Promise<number> => {
    const probe = await listenOnce(() => undefined);
    probe.server.close();
    return probe.port;
  };

  /** Starts `script` with node in the sandbox (detached) and waits until the sandbox's port relays. */
  async function serveInSandbox(target: { id: string; token: string }, port: number, script: string): Promise<void> {
    const agent = await t.root().openAgent(target.id, target.token);
    await agent.exec({ argv: ['node', '-e', script], detach: true });
    agent.close();
    await eventually(async () => {
      const socket = await t
        .root()
        .openPort(target.id, target.token, port)
        .catch(() => undefined);
      socket?.destroy();
      return socket !== undefined;
    });
  }

  it('relays bytes to a server the sandbox started, with half-close in both directions', async () => {
    const port = await freePort();
    // answers only after the client's EOF: the relay must carry the half-close through
    const echo = `require('net').createServer({ allowHalfOpen: true }, (s) => { let got = ''; s.on('data', (d) => (got += d)); s.on('end', () => s.end('echo:' + got)); }).listen(${port}, '127.0.0.1')`;
    await serveInSandbox(sb, port, echo);
    const socket = await open(port);
    const reply = readToEnd(socket);
    socket.end('ping');
    expect(await reply).toBe('echo:ping');
  });

  it("answers 502 for a port the host or another sandbox listens on: the loopback is not the guest's", async () => {
    const host = await listenOnce((s) => s.end('host'));
    try {
      expect(statusOf(await caught(open(host.port)))).toBe(502);
    } finally {
      host.server.close();
    }
    const other = await t.claim();
    const port = await freePort();
    await serveInSandbox(other, port, `require('net').createServer((s) => s.end('other')).listen(${port}, '127.0.0.1')`);
    const refused = await caught(open(port));
    expect({ status: statusOf(refused), message: asSandboxdHttpError(refused)?.message }).toEqual({
      status: 502,
      message: `nothing listening on guest port ${port} (no process of the sandbox listens there)`,
    });
    // its owner still reaches it
    expect(await readToEnd(await t.root().openPort(other.id, other.token, port))).toBe('other');
  });

  it('reaches a server that exec started in the sandbox', async () => {
    const probe = await listenOnce(() => undefined);
    const port = probe.port;
    probe.server.close();
    const agent = await t.root().openAgent(sb.id, sb.token);
    const script = `require('http').createServer((q, s) => s.end('from-guest:' + q.url)).listen(${port}, '127.0.0.1')`;
    const started = await agent.exec({ argv: ['node', '-e', script], detach: true });
    agent.close();
    expect(started.pid).toBeGreaterThan(0);
    let res: HttpResult | undefined;
    await eventually(async () => {
      const socket = await open(port).catch(() => undefined);
      if (socket !== undefined) res = await httpOver(socket, 'GET', '/hello');
      return res !== undefined;
    });
    expect(res).toMatchObject({ status: 200 });
    expect(res?.body.toString()).toBe('from-guest:/hello');
  });

  it('answers 502 before the 101 when nothing listens', async () => {
    const probe = await listenOnce(() => undefined);
    probe.server.close();
    expect(statusOf(await caught(open(probe.port)))).toBe(502);
  });

  it.each([['0'], ['65536'], ['http']])('answers 400 for port %s', async (port) => {
    const err = await caught(t.root().openPort(sb.id, sb.token, port as unknown as number));
    expect(statusOf(err)).toBe(400);
  });

  it('answers 401 without a token and 404 for a wrong one', async () => {
    expect(statusOf(await caught(t.root().openPort(sb.id, '', 8888)))).toBe(401);
    expect(statusOf(await caught(t.root().openPort(sb.id, 'wrong', 8888)))).toBe(404);
  });

  it('answers a bare GET with 426 and does not wake a hibernated sandbox', async () => {
    const other = await t.claim();
    await t.root().hibernate(other.id);
    const r = await raw(t.url(), 'GET', `/v1/sandboxes/${other.id}/ports/8888`, { token: other.token });
    expect(r.status).toBe(426);
    const agentGet = await raw(t.url(), 'GET', `/v1/sandboxes/${other.id}/agent`, { token: other.token });
    expect(agentGet.status).toBe(426);
    expect((await t.root().sandbox(other.id)).hibernated).toBe(true);
  });

  it('wakes a hibernated sandbox on a relay', async () => {
    const other = await t.claim();
    await t.root().hibernate(other.id);
    const socket = await t.root().openPort(other.id, other.token, 8888);
    expect(json(await httpOver(socket, 'GET', '/'))).toMatchObject({ status: 'ok' });
    expect((await t.root().sandbox(other.id)).hibernated).toBe(false);
  });

  it('drops open relays when the node is partitioned', async () => {
    try {
      const socket = await open(8888);
      const closed = new Promise<void>((r) => socket.once('close', () => r()));
      t.sim.node('node-0').setFaults({ partition: 'close' });
      await closed;
      expect(socket.destroyed).toBe(true);
    } finally {
      t.sim.node('node-0').clearFaults();
    }
  });

  describe('guest port 8888: the built-in runtime', () => {
    it('answers GET / with status ok', async () => {
      const r = await httpOver(await open(8888), 'GET', '/');
      expect(r.status).toBe(200);
      expect(json(r)).toMatchObject({ status: 'ok' });
    });

    it('runs a command split like a shell would, without one, in the sandbox root', async () => {
      const body = Buffer.from(JSON.stringify({ command: `sh -c 'echo "$0 hi"; exit 4' there` }));
      const r = await httpOver(await open(8888), 'POST', '/execute', body, { 'content-type': 'application/json' });
      expect(json(r)).toEqual({ stdout: 'there hi\n', stderr: '', exit_code: 4, timed_out: false });
    });

    it('answers timed_out when the command outlives timeout_seconds', async () => {
      const body = Buffer.from(JSON.stringify({ command: 'sleep 30', timeout_seconds: 1 }));
      const r = await httpOver(await open(8888), 'POST', '/execute', body, { 'content-type': 'application/json' });
      expect(json(r)).toMatchObject({ timed_out: true, exit_code: -1 });
    });

    it('uploads, downloads, lists and answers exists over the same root as the agent', async () => {
      const { body, type } = multipart('data/in.txt', Buffer.from('uploaded bytes'));
      const up = await httpOver(await open(8888), 'POST', '/upload', body, { 'content-type': type });
      expect(up.status).toBe(200);
      const agent = await t.root().openAgent(sb.id, sb.token);
      expect((await agent.stat('/data/in.txt')).size).toBe(14);
      agent.close();
      const down = await httpOver(await open(8888), 'GET', `/download/${encodeURIComponent('data/in.txt')}`);
      expect(down.status).toBe(200);
      expect(down.body.toString()).toBe('uploaded bytes');
      const list = await httpOver(await open(8888), 'GET', `/list/data`);
      expect(json(list)).toEqual([{ name: 'in.txt', size: 14, type: 'file', mod_time: expect.any(Number) }]);
      expect(json(await httpOver(await open(8888), 'GET', `/exists/${encodeURIComponent('data/in.txt')}`))).toMatchObject({ exists: true });
      expect(json(await httpOver(await open(8888), 'GET', `/exists/nope.txt`))).toMatchObject({ exists: false });
    });

    it('answers 403 for a path escaping the root and 404 for a missing file', async () => {
      expect((await httpOver(await open(8888), 'GET', `/download/${encodeURIComponent('../../etc/passwd')}`)).status).toBe(403);
      expect((await httpOver(await open(8888), 'GET', `/exists/${encodeURIComponent('../x')}`)).status).toBe(403);
      const { body, type } = multipart('../../escape.txt', Buffer.from('x'));
      expect((await httpOver(await open(8888), 'POST', '/upload', body, { 'content-type': type })).status).toBe(403);
      expect((await httpOver(await open(8888), 'GET', `/download/missing.txt`)).status).toBe(404);
    });
  });
});

describe('an open relay holds the idle clock', () => {
  it('keeps the sandbox from idle hibernation while open, and lets it hibernate once closed', async () => {
    const clock = new ManualClock();
    const t = await startDataSim({ clock, pools: [{ template: 'base:24.04', warm: 1, idleHibernateSeconds: 10 }] });
    try {
      const sb = await t.claim();
      const socket = await t.root().openPort(sb.id, sb.token, 8888);
      await clock.advance(30_000);
      t.sim.node('node-0').tick();
      expect((await t.root().sandbox(sb.id)).hibernated).toBe(false);
      const closed = new Promise<void>((r) => socket.once('close', () => r()));
      socket.destroy();
      await closed;
      // the node sees the relay end when its side of the socket closes
      await eventually(() => !t.sim.node('node-0').state.dataPlane?.isHeld(sb.id));
      await clock.advance(11_000);
      t.sim.node('node-0').tick();
      expect((await t.root().sandbox(sb.id)).hibernated).toBe(true);
    } finally {
      await t.close();
    }
  });
});
