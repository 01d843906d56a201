import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import {
  AGENT_CHUNK_BYTES,
  LineReader,
  SandboxdClient,
  asAgentError,
  asSandboxdHttpError,
  isAbortError,
  isAgentError,
  isAgentProtocolError,
  isReplyTooLarge,
  type AgentConnection,
} from '../src';
import { replyJson, startStubNode, type StubNode } from './stub-node';

async function caught(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

describe('exec', () => {
  let stub: StubNode;
  let client: SandboxdClient;
  beforeEach(async () => {
    stub = await startStubNode();
    client = new SandboxdClient({ baseUrl: stub.url, token: 'node-token' });
  });
  afterEach(async () => {
    await client.close();
    await stub.close();
  });

  it('posts the wire body with the sandbox token and returns the result', async () => {
    stub.setHandler((_c, res) => replyJson(res, 200, { exit_code: 2, stdout: 'out', stderr: 'err' }));
    const r = await client.exec('sb_1', 'sandbox-token', { argv: ['ls', '-l'], cwd: '/work', env: { CI: '1' }, timeoutSeconds: 30 });
    expect(r).toEqual({ exitCode: 2, stdout: 'out', stderr: 'err' });
    expect(stub.calls[0]).toMatchObject({ method: 'POST', path: '/v1/sandboxes/sb_1/exec', authorization: 'Bearer sandbox-token' });
    expect(JSON.parse(stub.calls[0]?.body ?? '')).toEqual({ argv: ['ls', '-l'], cwd: '/work', env: { CI: '1' }, timeout_seconds: 30 });
  });

  it('reads a reply larger than the 1 MiB cap of other verbs (8 MiB of output fits)', async () => {
    const big = 'x'.repeat(8 << 20);
    stub.setHandler((_c, res) => replyJson(res, 200, { exit_code: 0, stdout: big, stderr: '' }));
    expect((await client.exec('sb_1', 't', { argv: ['cat'] })).stdout.length).toBe(8 << 20);
  });

  it('tells the caller the bytes it holds before keeping them, and stops reading at once when the caller refuses', async () => {
    const out = 'x'.repeat(1 << 20);
    // a reply with its length holds that length before anything is read
    stub.setHandler((_c, res) => replyJson(res, 200, { exit_code: 0, stdout: out, stderr: '' }));
    const held: number[] = [];
    await client.exec('sb_1', 't', { argv: ['cat'] }, { holdReplyBytes: (n) => held.push(n) });
    expect(held).toEqual([Buffer.byteLength(JSON.stringify({ exit_code: 0, stdout: out, stderr: '' }))]);
    // a chunked reply holds each chunk as it comes, and what the caller throws ends the call
    stub.setHandler((_c, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(`{"exit_code":0,"stdout":"${out}`);
      res.write(out);
      res.end('","stderr":""}');
    });
    let taken = 0;
    const refusal = new Error('the namespace holds too much');
    const err = await caught(
      client.exec(
        'sb_1',
        't',
        { argv: ['cat'] },
        {
          holdReplyBytes: (n) => {
            if (taken + n > 1.5 * (1 << 20)) throw refusal;
            taken += n;
          },
        },
      ),
    );
    expect(err).toBe(refusal);
    expect(taken).toBeLessThanOrEqual(1.5 * (1 << 20));
  });

  it("refuses a reply past the caller's read cap as too large", async () => {
    stub.setHandler((_c, res) => replyJson(res, 200, { exit_code: 0, stdout: 'x'.repeat(4096), stderr: '' }));
    await expect(client.exec('sb_1', 't', { argv: ['cat'] }, { replyLimitBytes: 1024 })).rejects.toThrow(/too large|exceeds|limit/i);
  });

  it.each([[400], [404], [409], [413], [504]])('turns %i into SandboxdHttpError with the node message', async (status) => {
    stub.setHandler((_c, res) => replyJson(res, status, { error: `refused ${status}` }));
    const err = asSandboxdHttpError(await caught(client.exec('sb_1', 't', { argv: ['x'] })));
    expect(err?.statusCode).toBe(status);
    expect(err?.message).toBe(`refused ${status}`);
  });

  it('carries Retry-After of a 503', async () => {
    stub.setHandler((_c, res) => {
      res.setHeader('retry-after', '1');
      replyJson(res, 503, { error: 'node exec memory exhausted' });
    });
    expect(asSandboxdHttpError(await caught(client.exec('sb_1', 't', { argv: ['x'] })))?.retryAfterSeconds).toBe(1);
  });
});

type UpgradeHandler = (req: IncomingMessage, socket: Socket, head: Buffer) => void;

/** A node that answers upgrades as each test scripts them. */
async function upgradeNode(handler: UpgradeHandler): Promise<{ url: string; server: Server; close: () => Promise<void> }> {
  const server = createServer((_req, res) => replyJson(res, 426, { error: 'upgrade required' }));
  const sockets = new Set<Socket>();
  server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    sockets.add(socket);
    handler(req, socket, head);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

const SWITCH = (protocol: string): string => `HTTP/1.1 101 Switching Protocols\r\nconnection: Upgrade\r\nupgrade: ${protocol}\r\n\r\n`;

describe('openPort', () => {
  it('resolves with the relayed socket, bytes that came with the 101 first', async () => {
    let seen: IncomingMessage | undefined;
    const node = await upgradeNode((req, socket) => {
      seen = req;
      socket.write(`${SWITCH('tcp')}early`);
      socket.on('data', (d: Buffer) => socket.end(`echo:${d.toString()}`));
    });
    const client = new SandboxdClient({ baseUrl: node.url, token: 'node-token' });
    try {
      const socket = await client.openPort('sb_1', 'sandbox-token', 8080);
      let text = '';
      socket.on('data', (d: Buffer) => (text += d.toString()));
      const ended = new Promise<void>((r) => socket.on('end', () => r()));
      socket.write('hi');
      await ended;
      expect(text).toBe('earlyecho:hi');
      expect(seen?.url).toBe('/v1/sandboxes/sb_1/ports/8080');
      expect(seen?.headers).toMatchObject({ upgrade: 'tcp', authorization: 'Bearer sandbox-token' });
      socket.destroy();
    } finally {
      await client.close();
      await node.close();
    }
  });

  it('turns a refusal into SandboxdHttpError with the status and message', async () => {
    const node = await upgradeNode((_req, socket) => {
      const body = JSON.stringify({ error: 'nothing listening on guest port 1' });
      socket.end(
        `HTTP/1.1 502 Bad Gateway\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
      );
    });
    const client = new SandboxdClient({ baseUrl: node.url });
    try {
      const err = asSandboxdHttpError(await caught(client.openPort('sb_1', 't', 1)));
      expect(err).toMatchObject({ statusCode: 502, message: 'nothing listening on guest port 1', operation: 'openPort' });
    } finally {
      await node.close();
    }
  });

  it('gives up when the signal fires before the node answers', async () => {
    const node = await upgradeNode(() => undefined);
    const client = new SandboxdClient({ baseUrl: node.url });
    try {
      const ac = new AbortController();
      const p = caught(client.openPort('sb_1', 't', 1, { signal: ac.signal }));
      ac.abort();
      expect(isAbortError(await p)).toBe(true);
    } finally {
      await node.close();
    }
  });
});

/** A scripted guest agent: for each request frame, `reply` writes what the test wants. */
async function scriptedAgent(
  reply: (frame: Record<string, unknown>, socket: Socket) => void,
): Promise<{ client: SandboxdClient; frames: Record<string, unknown>[]; close: () => Promise<void> }> {
  const frames: Record<string, unknown>[] = [];
  const node = await upgradeNode((_req, socket) => {
    socket.write(SWITCH('silkd'));
    const reader = new LineReader(socket);
    void (async () => {
      for (let line = await reader.next(); line !== undefined; line = await reader.next()) {
        const frame = JSON.parse(line.toString()) as Record<string, unknown>;
        frames.push(frame);
        reply(frame, socket);
      }
    })().catch(() => undefined);
  });
  return { client: new SandboxdClient({ baseUrl: node.url }), frames, close: node.close };
}

const line = (socket: Socket, frame: object): boolean => socket.write(`${JSON.stringify(frame)}\n`);

describe('AgentConnection', () => {
  let agent: AgentConnection | undefined;
  afterEach(() => agent?.close());

  it('writes in data frames of at most 256 KiB, then data_end, and waits for done', async () => {
    const s = await scriptedAgent((f, socket) => {
      if (f.type === 'data_end') line(socket, { type: 'done' });
    });
    try {
      agent = await s.client.openAgent('sb_1', 't');
      await agent.writeFile('/f', Buffer.alloc(AGENT_CHUNK_BYTES * 2 + 10, 1), { mode: 0o600 });
      expect(s.frames[0]).toEqual({ v: 1, op: 'fs_write', path: '/f', mode: 0o600 });
      const sizes = s.frames.slice(1, -1).map((f) => Buffer.from(String(f.data), 'base64').length);
      expect(sizes).toEqual([AGENT_CHUNK_BYTES, AGENT_CHUNK_BYTES, 10]);
      expect(s.frames.at(-1)).toEqual({ type: 'data_end' });
    } finally {
      await s.close();
    }
  });

  it('turns an error frame into AgentError and stays usable', async () => {
    const s = await scriptedAgent((f, socket) => {
      if (f.path === '/missing') line(socket, { type: 'error', kind: 'not_found', message: 'no such file' });
      else {
        line(socket, { type: 'stat', info: { kind: 'file', size: 3, mode: 420, mtime_epoch_secs: 5 } });
        line(socket, { type: 'done' });
      }
    });
    try {
      agent = await s.client.openAgent('sb_1', 't');
      const err = await caught(agent.stat('/missing'));
      expect(isAgentError(err)).toBe(true);
      expect(asAgentError(err)).toMatchObject({ kind: 'not_found', message: 'no such file' });
      await expect(agent.stat('/ok')).resolves.toEqual({ kind: 'file', size: 3, mode: 420, mtimeEpochSecs: 5 });
    } finally {
      await s.close();
    }
  });

  it('runs concurrent calls one after another, in the order they were made', async () => {
    const s = await scriptedAgent((_f, socket) => {
      line(socket, { type: 'done' });
    });
    try {
      agent = await s.client.openAgent('sb_1', 't');
      const a = agent;
      await Promise.all(['/1', '/2', '/3', '/4'].map((p) => a.mkdir(p)));
      expect(s.frames.map((f) => f.path)).toEqual(['/1', '/2', '/3', '/4']);
    } finally {
      await s.close();
    }
  });

  it.each([
    ['a frame that is not JSON', 'nope\n'],
    ['a frame of no known type', '{"type":"surprise"}\n'],
    ['a frame with a prototype key', '{"type":"done","__proto__":{"polluted":true}}\n'],
  ])('fails the connection on %s', async (_what, text) => {
    const s = await scriptedAgent((_f, socket) => {
      socket.write(text);
    });
    try {
      agent = await s.client.openAgent('sb_1', 't');
      expect(isAgentProtocolError(await caught(agent.mkdir('/x')))).toBe(true);
      expect(agent.closed).toBe(true);
      expect(isAgentProtocolError(await caught(agent.mkdir('/y')))).toBe(true);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    } finally {
      await s.close();
    }
  });

  it('fails the call in flight when the node closes the connection', async () => {
    const s = await scriptedAgent((_f, socket) => {
      socket.destroy();
    });
    try {
      agent = await s.client.openAgent('sb_1', 't');
      expect(isAgentProtocolError(await caught(agent.list('/')))).toBe(true);
    } finally {
      await s.close();
    }
  });

  it('ends a transfer when its signal fires, with the signal reason', async () => {
    const s = await scriptedAgent(() => undefined);
    try {
      agent = await s.client.openAgent('sb_1', 't');
      const ac = new AbortController();
      const p = caught(agent.writeFile('/f', Buffer.from('x'), { signal: ac.signal }));
      ac.abort();
      expect(isAbortError(await p)).toBe(true);
      expect(agent.closed).toBe(true);
    } finally {
      await s.close();
    }
  });

  it('refuses a listing past its entries or its bytes of names, and ends the connection without reading the rest', async () => {
    const s = await scriptedAgent((f, socket) => {
      if (f.op !== 'fs_list') return;
      // a guest that answers without end: batches of 4 entries, then (never reached) done
      for (let batch = 0; batch < 50; batch++)
        line(socket, { type: 'entries', entries: [0, 1, 2, 3].map((i) => ({ name: `f${batch}-${i}`, kind: 'file', size: 1 })) });
      line(socket, { type: 'done' });
    });
    try {
      agent = await s.client.openAgent('sb_1', 't');
      const err = await caught(agent.list('/huge', { maxEntries: 10 }));
      expect(isReplyTooLarge(err)).toBe(true);
      expect((err as Error).message).toContain('more than 10 entries');
      expect(agent.closed).toBe(true);
      agent = await s.client.openAgent('sb_1', 't');
      expect(isReplyTooLarge(await caught(agent.list('/huge', { maxNameBytes: 40 })))).toBe(true);
      agent = await s.client.openAgent('sb_1', 't');
      await expect(agent.list('/huge')).resolves.toHaveLength(200);
    } finally {
      await s.close();
    }
  });

  it('ends a stat, a listing or a mkdir that the guest never answers when its signal fires', async () => {
    const s = await scriptedAgent(() => undefined);
    try {
      for (const call of [
        (a: AgentConnection, signal: AbortSignal) => a.stat('/x', { signal }),
        (a: AgentConnection, signal: AbortSignal) => a.list('/x', { signal }),
        (a: AgentConnection, signal: AbortSignal) => a.mkdir('/x', { signal }),
        (a: AgentConnection, signal: AbortSignal) => a.remove('/x', { signal }),
      ]) {
        agent = await s.client.openAgent('sb_1', 't');
        const err = await caught(call(agent, AbortSignal.timeout(50)));
        expect((err as Error).name).toBe('TimeoutError');
        expect(agent.closed).toBe(true);
      }
    } finally {
      await s.close();
    }
  });

  it('streams exec output and answers the exit code', async () => {
    const s = await scriptedAgent((_f, socket) => {
      line(socket, { type: 'started', pid: 42 });
      line(socket, { type: 'stdout', data: Buffer.from('out').toString('base64') });
      line(socket, { type: 'stderr', data: Buffer.from('err').toString('base64') });
      line(socket, { type: 'exit', code: 3 });
    });
    try {
      agent = await s.client.openAgent('sb_1', 't');
      const seen: string[] = [];
      const r = await agent.exec({ argv: ['x'] }, (stream, data) => seen.push(`${stream}:${data.toString()}`));
      expect(r).toEqual({ pid: 42, exitCode: 3 });
      expect(seen).toEqual(['stdout:out', 'stderr:err']);
      expect(s.frames[0]).toEqual({ v: 1, op: 'exec', argv: ['x'] });
    } finally {
      await s.close();
    }
  });
});
