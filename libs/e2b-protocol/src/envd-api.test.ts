import { encodeEnvelope, EnvelopeReader, FLAG_END_STREAM, messageEnvelope } from './connect-envelope';
import { ConnectError } from './connect-errors';
import { ProcessTable, serveEnvd, type EnvdBackend, type EnvdReply, type EnvdRequest } from './envd-api';
import type { FileFacts } from './envd-filesystem';

const file = (path: string, kind: FileFacts['kind'] = 'file'): FileFacts => ({
  name: path.slice(path.lastIndexOf('/') + 1),
  path,
  kind,
  size: 3,
  mode: 0o644,
});

function backend(): EnvdBackend & { files: Map<string, Buffer> } {
  const files = new Map<string, Buffer>();
  return {
    files,
    exec: (r) =>
      r.cmd === 'sleep'
        ? new Promise((_ok, fail) => r.signal.addEventListener('abort', () => fail(new Error('aborted'))))
        : Promise.resolve({
            exitCode: r.args.includes('fail') ? 3 : 0,
            stdout: Buffer.from(`ran ${r.args.join(' ')} in ${r.cwd ?? '~'}\n`),
            stderr: Buffer.alloc(0),
          }),
    stat: async (p) => {
      if (!files.has(p) && p !== '/home/user') throw new ConnectError('not_found', `${p} not found`);
      return file(p, p === '/home/user' ? 'dir' : 'file');
    },
    listDir: async (p) => [...files.keys()].filter((k) => k.startsWith(`${p}/`)).map((k) => file(k)),
    makeDir: async (p) => p !== '/home/user',
    remove: async (p) => void files.delete(p),
    move: async (s, d) => file(d),
    readFile: async (p) => {
      const f = files.get(p);
      if (!f) throw new ConnectError('not_found', `${p} not found`);
      return f;
    },
    writeFile: async (p, d) => void files.set(p, d),
  };
}

const rpc = (method: string, message: unknown, stream = false): EnvdRequest => ({
  method: 'POST',
  path: `/${method}`,
  query: new URLSearchParams(),
  contentType: stream ? 'application/connect+json' : 'application/json',
  timeoutMs: 60_000,
  body: stream ? messageEnvelope(message) : Buffer.from(JSON.stringify(message)),
});

async function frames(reply: EnvdReply): Promise<{ end: boolean; json: unknown }[]> {
  if (!('stream' in reply)) throw new Error(`not a stream: ${reply.status}`);
  const reader = new EnvelopeReader(1 << 20);
  const out: { end: boolean; json: unknown }[] = [];
  for await (const chunk of reply.stream)
    for (const e of reader.push(chunk)) out.push({ end: (e.flags & FLAG_END_STREAM) !== 0, json: JSON.parse(e.data.toString()) });
  return out;
}

const body = (r: EnvdReply): unknown => ('body' in r ? JSON.parse(r.body.toString()) : undefined);

describe('envd', () => {
  it('runs a command as a stream: start first, its output, the end, then end-stream', async () => {
    const r = await serveEnvd(
      backend(),
      new ProcessTable(),
      rpc('process.Process/Start', { process: { cmd: '/bin/bash', args: ['-l', '-c', 'fail'], cwd: '/work' } }, true),
    );
    expect(r.contentType).toBe('application/connect+json');
    const f = await frames(r);
    expect(f).toEqual([
      { end: false, json: { event: { start: { pid: 1000 } } } },
      { end: false, json: { event: { data: { stdout: Buffer.from('ran -l -c fail in /work\n').toString('base64') } } } },
      { end: false, json: { event: { end: { exitCode: 3, exited: true, status: 'exit status 3' } } } },
      { end: true, json: {} },
    ]);
  });

  it('kills a background command by pid, whose stream then ends with -1; an unknown pid is not_found', async () => {
    const table = new ProcessTable();
    const b = backend();
    const r = await serveEnvd(b, table, rpc('process.Process/Start', { process: { cmd: 'sleep', args: ['60'] } }, true));
    if (!('stream' in r)) throw new Error('no stream');
    const it = r.stream[Symbol.asyncIterator]();
    const first = await it.next();
    expect(first.value).toEqual(messageEnvelope({ event: { start: { pid: 1000 } } }));
    expect(table.size).toBe(1);
    const killed = await serveEnvd(b, table, rpc('process.Process/SendSignal', { process: { pid: 1000 }, signal: 'SIGNAL_SIGKILL' }));
    expect({ status: killed.status, body: body(killed) }).toEqual({ status: 200, body: {} });
    const rest: Buffer[] = [];
    for (let n = await it.next(); !n.done; n = await it.next()) rest.push(n.value);
    expect(rest.map((b) => JSON.parse(b.subarray(5).toString()))).toEqual([
      { event: { end: { exitCode: -1, status: 'signal: killed' } } },
      {},
    ]);
    expect(table.size).toBe(0);
    const again = await serveEnvd(b, table, rpc('process.Process/SendSignal', { process: { pid: 1000 }, signal: 'SIGNAL_SIGKILL' }));
    expect({ status: again.status, body: body(again) }).toEqual({ status: 404, body: { code: 'not_found', message: 'no process 1000' } });
  });

  it('reports a bad stream request inside the end-stream envelope, with a 200', async () => {
    const r = await serveEnvd(backend(), new ProcessTable(), {
      ...rpc('process.Process/Start', {}, true),
      body: encodeEnvelope(0, Buffer.from('{"process":{}}')),
    });
    expect(r.status).toBe(200);
    const f = await frames(r);
    expect(f).toHaveLength(1);
    expect(f[0]).toMatchObject({ end: true, json: { error: { code: 'invalid_argument' } } });
  });

  it('answers the filesystem RPCs with their Connect codes: exists, makeDir, list, remove', async () => {
    const b = backend();
    const t = new ProcessTable();
    const missing = await serveEnvd(b, t, rpc('filesystem.Filesystem/Stat', { path: '/home/user/a.txt' }));
    expect({ status: missing.status, body: body(missing) }).toEqual({
      status: 404,
      body: { code: 'not_found', message: '/home/user/a.txt not found' },
    });
    const exists = await serveEnvd(b, t, rpc('filesystem.Filesystem/MakeDir', { path: '/home/user' }));
    expect({ status: exists.status, code: (body(exists) as { code: string }).code }).toEqual({ status: 409, code: 'already_exists' });
    b.files.set('/home/user/a.txt', Buffer.from('abc'));
    const listed = await serveEnvd(b, t, rpc('filesystem.Filesystem/ListDir', { path: '/home/user', depth: 1 }));
    expect(body(listed)).toEqual({ entries: [expect.objectContaining({ name: 'a.txt', type: 'FILE_TYPE_FILE', size: '3' })] });
    expect(body(await serveEnvd(b, t, rpc('filesystem.Filesystem/Remove', { path: '/home/user/a.txt' })))).toEqual({});
    expect(b.files.size).toBe(0);
    const unknown = await serveEnvd(b, t, rpc('filesystem.Filesystem/WatchDir', { path: '/' }));
    expect(unknown.status).toBe(501);
  });

  it('writes files from multipart and octet-stream, reads them back, and answers health', async () => {
    const b = backend();
    const t = new ProcessTable();
    const boundary = 'xyz';
    const multipart = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="/home/user/a.txt"\r\n\r\nalpha\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="/home/user/b.txt"\r\n\r\nbeta\r\n--${boundary}--\r\n`,
    );
    const w = await serveEnvd(b, t, {
      method: 'POST',
      path: '/files',
      query: new URLSearchParams(),
      contentType: `multipart/form-data; boundary=${boundary}`,
      timeoutMs: undefined,
      body: multipart,
    });
    expect(body(w)).toEqual([
      { name: 'a.txt', type: 'file', path: '/home/user/a.txt' },
      { name: 'b.txt', type: 'file', path: '/home/user/b.txt' },
    ]);
    await serveEnvd(b, t, {
      method: 'POST',
      path: '/files',
      query: new URLSearchParams('path=/home/user/c.bin'),
      contentType: 'application/octet-stream',
      timeoutMs: undefined,
      body: Buffer.from([0, 1, 2]),
    });
    const read = await serveEnvd(b, t, {
      method: 'GET',
      path: '/files',
      query: new URLSearchParams('path=/home/user/a.txt'),
      contentType: undefined,
      timeoutMs: undefined,
      body: Buffer.alloc(0),
    });
    expect('body' in read && read.body.toString()).toBe('alpha');
    expect([...(b.files.get('/home/user/c.bin') ?? [])]).toEqual([0, 1, 2]);
    const gone = await serveEnvd(b, t, {
      method: 'GET',
      path: '/files',
      query: new URLSearchParams('path=/nope'),
      contentType: undefined,
      timeoutMs: undefined,
      body: Buffer.alloc(0),
    });
    expect({ status: gone.status, body: body(gone) }).toEqual({ status: 404, body: { code: 404, message: '/nope not found' } });
    expect(
      (
        await serveEnvd(b, t, {
          method: 'GET',
          path: '/health',
          query: new URLSearchParams(),
          contentType: undefined,
          timeoutMs: undefined,
          body: Buffer.alloc(0),
        })
      ).status,
    ).toBe(204);
  });
});
