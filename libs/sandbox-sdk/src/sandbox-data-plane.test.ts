import { once } from 'node:events';
import * as http from 'node:http';
import { Readable } from 'node:stream';
import { KubeConfig } from '@kubernetes/client-node';
import { isDeadlineExceeded, isInvalidArgument, isNotFound, isTooLarge, isWrongFileKind } from './errors';
import { Sandbox } from './sandbox';
import { execBody } from './sandbox-exec';

// The exec and files calls against a loopback stand-in for kube-apiserver: what goes on the
// wire (method, path, query, content types, bodies) and how each answer comes back.

interface Request {
  method: string;
  path: string;
  query: Record<string, string>;
  contentType: string;
  accept: string;
  chunked: boolean;
  body: Buffer;
}

type Answer = { code: number; type?: string; body: string | Buffer };

const BASE = '/apis/agents.x-k8s.io/v1beta1/namespaces/team/sandboxes/sb';
const status = (code: number, reason: string, message: string): Answer => ({
  code,
  type: 'application/json',
  body: JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message }),
});
const json = (code: number, value: unknown): Answer => ({ code, type: 'application/json', body: JSON.stringify(value) });

let server: http.Server;
let requests: Request[];
let answer: (r: Request) => Answer;
let sb: Sandbox;
let kc: KubeConfig;

beforeEach(async () => {
  requests = [];
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '', 'http://x');
      const r: Request = {
        method: req.method ?? '',
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        contentType: req.headers['content-type'] ?? '',
        accept: req.headers.accept ?? '',
        chunked: req.headers['transfer-encoding'] === 'chunked',
        body: Buffer.concat(chunks),
      };
      requests.push(r);
      const a = answer(r);
      res.writeHead(a.code, a.type ? { 'Content-Type': a.type } : {}).end(a.body);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  sb = new Sandbox(kc, { name: 'sb', namespace: 'team', node: '', address: '', token: '', via: 'existing' });
});

afterEach(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('execBody', () => {
  it('sends the time limit in whole seconds, rounded up, and only the options given', () => {
    expect(execBody(['ls'], { timeoutMs: 1500 })).toEqual({
      apiVersion: 'agents.x-k8s.io/v1beta1',
      kind: 'SandboxExecOptions',
      argv: ['ls'],
      timeoutSeconds: 2,
    });
    expect(execBody(['ls'], { timeoutMs: 1 }).timeoutSeconds).toBe(1);
    expect(execBody(['sh', '-c', 'x'], { cwd: '/work', env: { A: '1' } })).toMatchObject({ cwd: '/work', env: { A: '1' } });
    expect(() => execBody([])).toThrow('argv must be a non-empty array of strings');
    expect(() => execBody(['ls'], { timeoutMs: -1 })).toThrow('exec timeoutMs must be a number of milliseconds >= 0, got -1');
  });
});

describe('Sandbox.exec', () => {
  it('posts SandboxExecOptions and returns the result, a non-zero exit included', async () => {
    answer = () => json(200, { kind: 'SandboxExecResult', exitCode: 3, stdout: 'out\n', stderr: 'err\n' });
    expect(await sb.exec(['python3', '/work/x.py'], { cwd: '/work', timeoutMs: 2500 })).toEqual({
      exitCode: 3,
      stdout: 'out\n',
      stderr: 'err\n',
    });
    expect(requests).toHaveLength(1);
    expect(requests[0]?.method).toBe('POST');
    expect(requests[0]?.path).toBe(`${BASE}/exec`);
    expect(JSON.parse(requests[0]?.body.toString() ?? '')).toEqual({
      apiVersion: 'agents.x-k8s.io/v1beta1',
      kind: 'SandboxExecOptions',
      argv: ['python3', '/work/x.py'],
      cwd: '/work',
      timeoutSeconds: 3,
    });
  });

  it('turns a 504 and a 413 Status into typed errors carrying the message', async () => {
    answer = () => status(504, 'Timeout', 'sandbox team/sb: the command ran past 1s');
    const timedOut: unknown = await sb.exec(['sleep', '5'], { timeoutMs: 1000 }).catch((e: unknown) => e);
    expect(isDeadlineExceeded(timedOut)).toBe(true);
    expect((timedOut as Error).message).toBe(
      'create sandboxes/exec.agents.x-k8s.io "sb" in namespace "team": HTTP 504: sandbox team/sb: the command ran past 1s',
    );
    answer = () => status(413, 'RequestEntityTooLarge', 'output over 8 MiB');
    expect(isTooLarge(await sb.exec(['yes']).catch((e: unknown) => e))).toBe(true);
  });
});

describe('Sandbox.files', () => {
  it('reads a file as bytes, and refuses a directory by its listing', async () => {
    answer = (r) =>
      r.query.path === '/work/bin'
        ? { code: 200, type: 'application/octet-stream', body: Buffer.from([0, 1, 255]) }
        : json(200, { kind: 'SandboxFileList', items: [] });
    expect(await sb.files.read('/work/bin')).toEqual(Buffer.from([0, 1, 255]));
    expect(requests[0]).toMatchObject({ method: 'GET', path: `${BASE}/files`, query: { path: '/work/bin' } });
    const dir: unknown = await sb.files.read('/work').catch((e: unknown) => e);
    expect(isWrongFileKind(dir)).toBe(true);
    expect((dir as Error).message).toBe('/work in sandbox team/sb is a directory');
  });

  it('streams a write chunked with its mode, and sends a Buffer with its length', async () => {
    answer = (r) =>
      json(201, {
        kind: 'SandboxFileInfo',
        path: r.query.path,
        type: 'file',
        size: r.body.length,
        mode: 0o755,
        mtime: '2025-01-01T00:00:00Z',
      });
    const info = await sb.files.write('/work/run.sh', Readable.from([Buffer.from('#!/bin/sh\n'), Buffer.from('echo hi\n')]), {
      mode: 0o755,
    });
    expect(info).toMatchObject({ path: '/work/run.sh', type: 'file', size: 18, mode: 0o755 });
    expect(requests[0]).toMatchObject({
      method: 'PUT',
      query: { path: '/work/run.sh', mode: '0755' },
      contentType: 'application/octet-stream',
      chunked: true,
    });
    expect(requests[0]?.body.toString()).toBe('#!/bin/sh\necho hi\n');
    await sb.files.write('/work/a.txt', 'text');
    expect(requests[1]).toMatchObject({ chunked: false, query: { path: '/work/a.txt' } });
    expect(requests[1]?.body.toString()).toBe('text');
  });

  it('lists, stats and removes', async () => {
    answer = (r) => {
      if (r.method === 'DELETE') return json(200, { kind: 'Status', status: 'Success' });
      if (r.query.stat === 'true') return json(200, { kind: 'SandboxFileInfo', path: r.query.path, type: 'dir', size: 0, mode: '0750' });
      return json(200, {
        kind: 'SandboxFileList',
        path: r.query.path,
        items: [
          { name: 'a.txt', kind: 'file', size: 5 },
          { name: 'sub', kind: 'dir', size: 0 },
        ],
      });
    };
    expect(await sb.files.list('/work')).toEqual([
      { name: 'a.txt', kind: 'file', size: 5 },
      { name: 'sub', kind: 'dir', size: 0 },
    ]);
    expect(await sb.files.stat('/work')).toEqual({ path: '/work', type: 'dir', size: 0, mode: 0o750 });
    await sb.files.remove('/work/sub', { recursive: true });
    expect(requests.map((r) => [r.method, r.query])).toEqual([
      ['GET', { path: '/work' }],
      ['GET', { path: '/work', stat: 'true' }],
      ['DELETE', { path: '/work/sub', recursive: 'true' }],
    ]);
  });

  it('asks for and sends tar for directories', async () => {
    answer = (r) =>
      r.method === 'GET'
        ? { code: 200, type: 'application/x-tar', body: Buffer.alloc(1024) }
        : json(201, { kind: 'SandboxFileInfo', path: r.query.path, type: 'dir', size: 0, mode: 0o755 });
    const tar = await sb.files.download('/work');
    const got: Buffer[] = [];
    for await (const c of tar) got.push(c as Buffer);
    expect(Buffer.concat(got).length).toBe(1024);
    await sb.files.upload('/work/dir', Readable.from([Buffer.alloc(1024)]));
    expect(requests.map((r) => [r.method, r.accept, r.contentType, r.body.length])).toEqual([
      ['GET', 'application/x-tar', '', 0],
      ['PUT', 'application/json', 'application/x-tar', 1024],
    ]);
  });

  it('maps a 404 to NotFound and refuses a NUL in a path before sending', async () => {
    answer = () => status(404, 'NotFound', 'sandbox team/sb: no such file /nope');
    const missing: unknown = await sb.files.read('/nope').catch((e: unknown) => e);
    expect(isNotFound(missing)).toBe(true);
    expect((missing as Error).message).toBe(
      'not found: get sandboxes/files.agents.x-k8s.io "sb" in namespace "team": sandbox team/sb: no such file /nope',
    );
    const before = requests.length;
    expect(isInvalidArgument(await sb.files.read('/a\0b').catch((e: unknown) => e))).toBe(true);
    expect(requests.length).toBe(before);
  });

  it("while a sandbox is new, retries its own 404 but not a missing file's", async () => {
    const fresh = new Sandbox(kc, {
      name: 'sb',
      namespace: 'team',
      node: '',
      address: '',
      token: '',
      via: 'claim',
      settleUntil: Date.now() + 60_000,
    });
    let listed = true;
    answer = (r) => (r.path === BASE && listed ? json(200, { metadata: { name: 'sb' } }) : status(404, 'NotFound', 'not here'));
    expect(isNotFound(await fresh.files.read('/work/nope').catch((e: unknown) => e))).toBe(true);
    expect(requests.map((r) => r.path)).toEqual([`${BASE}/files`, BASE]);

    requests = [];
    listed = false;
    let served = false;
    answer = (r) => {
      if (r.path === BASE) return status(404, 'NotFound', 'not listed yet');
      if (!served) {
        served = true;
        return status(404, 'NotFound', 'sandboxes "sb" not found');
      }
      return { code: 200, type: 'application/octet-stream', body: 'data' };
    };
    expect((await fresh.files.read('/work/a')).toString()).toBe('data');
    expect(requests.map((r) => r.path)).toEqual([`${BASE}/files`, BASE, `${BASE}/files`]);
  });
});
