import { request } from 'node:http';
import { createClient, type Client, ConnectError, Code, type Transport } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import type { DescService } from '@bufbuild/protobuf';
import { Filesystem, FileType, EventType, Process, Signal } from '@sandbox-scale/e2b-protocol';
import { startDataSim, eventually, hasEnded, type DataSim } from './helpers';

const ENVD = 49983;

describe('envd on guest port 49983', () => {
  let t: DataSim;
  let sb: { id: string; token: string };

  beforeAll(async () => {
    t = await startDataSim();
    sb = await t.claim();
  });
  afterAll(() => t?.close());

  /** A Connect client whose every call opens a connection of its own through the node's port relay. */
  const clientOf = <S extends DescService>(service: S, target = sb): Client<S> => {
    const transport: Transport = {
      unary: async (...args) => (await transportFor(target)).unary(...args),
      stream: async (...args) => (await transportFor(target)).stream(...args),
    };
    return createClient(service, transport);
  };
  const transportFor = async (target: { id: string; token: string }): Promise<Transport> => {
    const socket = await t.root().openPort(target.id, target.token, ENVD);
    return createConnectTransport({ baseUrl: 'http://envd', httpVersion: '1.1', nodeOptions: { createConnection: () => socket } });
  };
  const rest = async (method: string, path: string, body?: Buffer, headers: Record<string, string> = {}) => {
    const socket = await t.root().openPort(sb.id, sb.token, ENVD);
    return new Promise<{ status: number; body: Buffer }>((resolve, reject) => {
      const req = request({ createConnection: () => socket, method, path, headers: { host: 'envd', ...headers } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      });
      req.on('error', reject);
      req.end(body);
    });
  };
  const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');

  it('starts a command and streams its output as it comes, start first and end last', async () => {
    const proc = clientOf(Process);
    const kinds: string[] = [];
    let out = '';
    const firstOutputAt: number[] = [];
    const started = Date.now();
    let endedAt = 0;
    for await (const r of proc.start({ process: { cmd: '/bin/sh', args: ['-c', 'echo one; sleep 0.5; echo two >&2; exit 3'] } })) {
      const e = r.event?.event;
      kinds.push(e?.case ?? 'none');
      if (e?.case === 'data' && e.value.output.case !== undefined) {
        out += `${e.value.output.case}:${text(e.value.output.value)}`;
        firstOutputAt.push(Date.now() - started);
      }
      if (e?.case === 'end') {
        endedAt = Date.now() - started;
        expect(e.value).toMatchObject({ exitCode: 3, exited: true, status: 'exit status 3' });
      }
    }
    expect(kinds[0]).toBe('start');
    expect(kinds.at(-1)).toBe('end');
    expect(out).toBe('stdout:one\nstderr:two\n');
    // the first line arrived before the command ended: output is streamed, not sent at the end
    expect(firstOutputAt[0]).toBeLessThan(endedAt - 300);
  });

  it('runs in the user home by default, and in cwd with envs when asked', async () => {
    const proc = clientOf(Process);
    const run = async (cmd: string, cwd?: string, envs: Record<string, string> = {}) => {
      let out = '';
      for await (const r of proc.start({ process: { cmd: '/bin/sh', args: ['-c', cmd], envs, ...(cwd ? { cwd } : {}) } }))
        if (r.event?.event.case === 'data' && r.event.event.value.output.case === 'stdout') out += text(r.event.event.value.output.value);
      return out;
    };
    expect(await run('pwd')).toBe(`${t.rootOf(sb.id)}/home/user\n`);
    await run('mkdir -p /dev/null 2>/dev/null; mkdir -p sub && echo hi > sub/f');
    expect(await run('cat f; echo "$GREETING"', '/home/user/sub', { GREETING: 'hello' })).toBe('hi\nhello\n');
    await expect(run('true', '/nowhere')).rejects.toMatchObject({ code: Code.InvalidArgument });
  });

  it('takes prototype keys in envs as ordinary variable names, over the raw Connect-JSON wire', async () => {
    // written out: an object literal's __proto__ would set its prototype, never a key
    const msg = Buffer.from(
      '{"process":{"cmd":"/bin/sh","args":["-c","echo \\"$__proto__|$constructor\\""],"envs":{"__proto__":"p","constructor":"c"}}}',
    );
    const head = Buffer.alloc(5);
    head.writeUInt32BE(msg.length, 1);
    const r = await rest('POST', '/process.Process/Start', Buffer.concat([head, msg]), {
      'content-type': 'application/connect+json',
      'connect-protocol-version': '1',
    });
    expect(r.status).toBe(200);
    const frames: unknown[] = [];
    for (let at = 0; at < r.body.length;) {
      const len = r.body.readUInt32BE(at + 1);
      frames.push(JSON.parse(r.body.subarray(at + 5, at + 5 + len).toString()));
      at += 5 + len;
    }
    expect(frames).toContainEqual({ event: { data: { stdout: Buffer.from('p|c\n').toString('base64') } } });
    expect(frames.at(-1)).toEqual({});
    expect(({} as Record<string, unknown>).p).toBeUndefined();
  });

  it('keeps a command running for Connect, List, SendInput, CloseStdin and SendSignal', async () => {
    const proc = clientOf(Process);
    const stream = proc.start({ process: { cmd: '/bin/cat', args: [] }, stdin: true, tag: 'the-cat' });
    const it = stream[Symbol.asyncIterator]();
    const first = await it.next();
    const pid = first.value?.event?.event.case === 'start' ? first.value.event.event.value.pid : 0;
    expect(pid).toBeGreaterThan(0);
    expect((await proc.list({})).processes.map((p) => [p.pid, p.tag, p.config?.cmd])).toContainEqual([pid, 'the-cat', '/bin/cat']);

    // a second reader, from a fresh connection, sees what comes from now on: input is sent once
    // its start event says it reads
    const connected: string[] = [];
    const attached = proc.connect({ process: { selector: { case: 'tag', value: 'the-cat' } } })[Symbol.asyncIterator]();
    expect((await attached.next()).value?.event?.event).toEqual({ case: 'start', value: expect.objectContaining({ pid }) as unknown });
    const reader = (async () => {
      for (let n = await attached.next(); !n.done; n = await attached.next()) {
        const e = n.value.event?.event;
        if (e?.case === 'data' && e.value.output.case === 'stdout') connected.push(text(e.value.output.value));
        if (e?.case === 'end') connected.push(`end:${e.value.exitCode}`);
      }
    })();
    await proc.sendInput({
      process: { selector: { case: 'pid', value: pid } },
      input: { input: { case: 'stdin', value: Buffer.from('hello cat\n') } },
    });
    const echoed = await it.next();
    expect(echoed.value?.event?.event.case === 'data' && text(echoed.value.event.event.value.output.value ?? new Uint8Array())).toBe(
      'hello cat\n',
    );
    await proc.closeStdin({ process: { selector: { case: 'pid', value: pid } } });
    const rest: string[] = [];
    for (let n = await it.next(); !n.done; n = await it.next()) rest.push(n.value.event?.event.case ?? '');
    expect(rest).toEqual(['end']);
    await reader;
    expect(connected).toEqual(['hello cat\n', 'end:0']);

    // SendSignal ends a running command; its stream's end says so
    const sleeper = proc.start({ process: { cmd: 'sleep', args: ['60'] } })[Symbol.asyncIterator]();
    const s = await sleeper.next();
    const spid = s.value?.event?.event.case === 'start' ? s.value.event.event.value.pid : 0;
    await proc.sendSignal({ process: { selector: { case: 'pid', value: spid } }, signal: Signal.SIGKILL });
    const end = await sleeper.next();
    expect(end.value?.event?.event).toMatchObject({ case: 'end', value: { exitCode: -1, exited: false, status: 'signal: killed' } });
    await eventually(() => hasEnded(spid));
    await expect(proc.sendSignal({ process: { selector: { case: 'pid', value: spid } }, signal: Signal.SIGKILL })).rejects.toMatchObject({
      code: Code.NotFound,
    });
  });

  it('kills a command at the caller deadline (Connect-Timeout-Ms)', async () => {
    const proc = clientOf(Process);
    let pid = 0;
    const err = await (async () => {
      for await (const r of proc.start({ process: { cmd: 'sleep', args: ['60'] } }, { timeoutMs: 500 }))
        if (r.event?.event.case === 'start') pid = r.event.event.value.pid;
    })().catch((e: unknown) => e);
    expect(ConnectError.from(err).code).toBe(Code.DeadlineExceeded);
    await eventually(() => hasEnded(pid));
  });

  it('serves the filesystem: MakeDir, Stat, ListDir, Move, Remove, with the codes the SDKs read', async () => {
    const fs = clientOf(Filesystem);
    expect((await fs.makeDir({ path: '/work/a/b' })).entry).toMatchObject({ name: 'b', path: '/work/a/b', type: FileType.DIRECTORY });
    await expect(fs.makeDir({ path: '/work/a/b' })).rejects.toMatchObject({ code: Code.AlreadyExists });
    expect(
      (await rest('POST', '/files?path=/work/a/f.txt', Buffer.from('12345'), { 'content-type': 'application/octet-stream' })).status,
    ).toBe(200);
    expect((await fs.stat({ path: '/work/a/f.txt' })).entry).toMatchObject({
      name: 'f.txt',
      size: 5n,
      type: FileType.FILE,
      permissions: '-rw-r--r--',
    });
    expect((await fs.listDir({ path: '/work', depth: 2 })).entries.map((e) => e.path)).toEqual(['/work/a', '/work/a/b', '/work/a/f.txt']);
    expect((await fs.move({ source: '/work/a/f.txt', destination: '/work/g.txt' })).entry?.path).toBe('/work/g.txt');
    await fs.remove({ path: '/work/a' });
    await expect(fs.stat({ path: '/work/a' })).rejects.toMatchObject({ code: Code.NotFound });
    await expect(fs.remove({ path: '/work/a' })).rejects.toMatchObject({ code: Code.NotFound });
    // `/..` is `/`, as in any guest; a link out of the root is refused
    await expect(fs.stat({ path: '/../../etc/passwd' })).rejects.toMatchObject({ code: Code.NotFound });
    for await (const _ of clientOf(Process).start({ process: { cmd: 'ln', args: ['-s', '/etc', 'out'] } })) void _;
    await expect(fs.listDir({ path: '/home/user/out' })).rejects.toMatchObject({ code: Code.PermissionDenied });
    // relative paths are the user's home
    await fs.makeDir({ path: 'rel' });
    expect((await fs.stat({ path: '/home/user/rel' })).entry?.type).toBe(FileType.DIRECTORY);
  });

  it('watches a directory (WatchDir stream, and the polled watcher trio)', async () => {
    const fs = clientOf(Filesystem);
    await fs.makeDir({ path: '/watched' });
    const seen: string[] = [];
    const abort = new AbortController();
    const stream = fs.watchDir({ path: '/watched', recursive: true }, { signal: abort.signal })[Symbol.asyncIterator]();
    expect((await stream.next()).value?.event.case).toBe('start');
    const { watcherId } = await fs.createWatcher({ path: '/watched' });
    await rest('POST', '/files?path=/watched/new.txt', Buffer.from('x'), { 'content-type': 'application/octet-stream' });
    // the write's own events (a create, and a write when the kernel reports one) follow the start
    while (!seen.includes('new.txt:CREATE')) {
      const e = await stream.next();
      if (e.value?.event.case === 'filesystem') seen.push(`${e.value.event.value.name}:${EventType[e.value.event.value.type]}`);
    }
    expect(seen.every((s) => s.startsWith('new.txt:'))).toBe(true);
    abort.abort();
    await eventually(async () => (await fs.getWatcherEvents({ watcherId })).events.some((ev) => ev.name === 'new.txt'));
    await fs.removeWatcher({ watcherId });
    await expect(fs.getWatcherEvents({ watcherId })).rejects.toMatchObject({ code: Code.NotFound });
  });

  it('serves /health and /files (multipart and octet-stream), and refuses other users and paths', async () => {
    expect((await rest('GET', '/health')).status).toBe(204);
    const boundary = 'b0und4ry';
    const body = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="/up/one.txt"\r\n\r\nfirst\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="/up/two.txt"\r\n\r\nsecond\r\n--${boundary}--\r\n`,
    );
    const up = await rest('POST', '/files', body, { 'content-type': `multipart/form-data; boundary=${boundary}` });
    expect(up.status).toBe(200);
    expect(JSON.parse(up.body.toString())).toEqual([
      { name: 'one.txt', type: 'file', path: '/up/one.txt' },
      { name: 'two.txt', type: 'file', path: '/up/two.txt' },
    ]);
    expect((await rest('GET', '/files?path=/up/two.txt')).body.toString()).toBe('second');
    expect(await rest('GET', '/files?path=/up/none')).toMatchObject({ status: 404 });
    expect((await rest('GET', '/files?path=/up/one.txt&username=mallory')).status).toBe(400);
    expect((await rest('GET', '/init')).status).toBe(404);
    await expect(
      clientOf(Filesystem).stat({ path: '/up' }, { headers: { authorization: `Basic ${Buffer.from('mallory:').toString('base64')}` } }),
    ).rejects.toMatchObject({
      code: Code.InvalidArgument,
    });
  });

  it("never reaches another sandbox's processes, and release ends them", async () => {
    const other = await t.claim();
    const proc = clientOf(Process);
    const it = proc.start({ process: { cmd: 'sleep', args: ['60'] } })[Symbol.asyncIterator]();
    const s = await it.next();
    const pid = s.value?.event?.event.case === 'start' ? s.value.event.event.value.pid : 0;
    await expect(
      clientOf(Process, other).sendSignal({ process: { selector: { case: 'pid', value: pid } }, signal: Signal.SIGKILL }),
    ).rejects.toMatchObject({ code: Code.NotFound });
    expect((await clientOf(Process, other).list({})).processes).toEqual([]);
    await t.root().release(sb.id);
    await eventually(() => hasEnded(pid));
  });
});
