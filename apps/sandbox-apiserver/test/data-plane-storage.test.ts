import { randomBytes } from 'node:crypto';
import { Registry } from 'prom-client';
import { ClaimIndex } from '@sandbox-scale/scale-core';
import { SandboxdClientSet, type SandboxdClient } from '@sandbox-scale/sandboxd-client';
import { startSim, type Sim } from '@sandbox-scale/sandboxd-sim';
import { DataPlaneAudit } from '../src/data-plane/data-plane-audit';
import { ExecStorage } from '../src/data-plane/exec-storage';
import { FilesStorage, type FilesReply } from '../src/data-plane/files-storage';
import { PortForwardStorage } from '../src/data-plane/portforward';
import { SandboxAccess } from '../src/data-plane/sandbox-access';
import { NodeRouter } from '../src/storage/node-router';
import { Revisions } from '../src/storage/revisions';
import { SandboxCache } from '../src/storage/sandbox-cache';
import { SandboxStorage } from '../src/storage/sandbox-storage';
import { WatchHub } from '../src/storage/watch-hub';
import { publishedInventory, quietLog, statusOf } from './fleet-fixture';
import { eventually } from '@sandbox-scale/e2e';

// The data-plane storages against sandboxd-sim's real processes and files, over HTTP: the
// storage, its SandboxAccess and the node's client as the server wires them, without the HTTP
// layer in front.

const NS = 'team-dp';
const TOKEN = 'unit-fleet-token';
const TEMPLATE = 'registry.local/dp:1';
const MAX = 1024 * 1024;

let sim: Sim;
let clients: SandboxdClientSet;
let direct: SandboxdClient;
let access: SandboxAccess;
let exec: ExecStorage;
let files: FilesStorage;
let ports: PortForwardStorage;
let registry: Registry;
const caller = { user: 'alice' };

beforeAll(async () => {
  sim = await startSim({ nodes: 1, speed: 0, token: TOKEN, pools: [{ template: TEMPLATE, warm: 3 }], dataPlane: true });
  const node = sim.nodes[0]?.name ?? '';
  sim.node(node).tick();
  clients = new SandboxdClientSet({ token: TOKEN });
  direct = clients.forNode(sim.nodes[0]?.url ?? '');
  const revisions = new Revisions();
  const cache = new SandboxCache({ graceMs: 50, hub: new WatchHub(10), revisions });
  const storage = new SandboxStorage(cache, new ClaimIndex({ maxBytes: 1 << 20 }), new NodeRouter(cache, clients), revisions);
  const ids: string[] = [];
  for (const name of ['box', 'gone']) ids.push((await direct.claim({ template: TEMPLATE, claimRef: `${NS}/${name}` })).id);
  cache.upsertInventory(await publishedInventory(direct, node, sim.nodes[0]?.addr ?? '', new Set(ids)));
  access = new SandboxAccess(storage);
  registry = new Registry();
  const audit = new DataPlaneAudit(quietLog, registry);
  exec = new ExecStorage(access, audit);
  files = new FilesStorage(access, audit, MAX);
  ports = new PortForwardStorage(access, audit);
  // 'gone' is released behind the storage's back: its node answers 404 from now on
  await direct.release(ids[1] ?? '');
});

afterAll(async () => {
  await clients?.close();
  await sim?.stop();
});

/** What a GET answered, read whole. */
async function readAll(
  path: string,
  opts: { tar?: boolean; stat?: boolean } = {},
): Promise<{ bytes?: Buffer; json?: Record<string, unknown> }> {
  let out: { bytes?: Buffer; json?: Record<string, unknown> } = {};
  await files.read(
    { namespace: NS, name: 'box', path, stat: opts.stat ?? false, tar: opts.tar ?? false },
    caller,
    async (r: FilesReply) => {
      if (r.kind === 'json') out = { json: r.body };
      else {
        const chunks: Buffer[] = [];
        for await (const c of r.stream) chunks.push(c);
        out = { bytes: Buffer.concat(chunks) };
      }
    },
  );
  return out;
}

async function* chunked(data: Buffer, size: number): AsyncGenerator<Buffer> {
  for (let at = 0; at < data.length; at += size) yield data.subarray(at, at + size);
}

describe('exec storage', () => {
  it('runs the command and answers SandboxExecResult; the token is read once and reused', async () => {
    const r = await exec.exec(NS, 'box', { argv: ['sh', '-c', 'echo hi; echo oops >&2; exit 2'] }, caller);
    expect(r).toEqual({ apiVersion: 'agents.x-k8s.io/v1beta1', kind: 'SandboxExecResult', exitCode: 2, stdout: 'hi\n', stderr: 'oops\n' });
    expect(access.size).toBe(1);
    await exec.exec(NS, 'box', { argv: ['true'] }, caller);
    expect(access.size).toBe(1);
  });

  it('maps the node: 504 past timeoutSeconds, 400 for a missing command or cwd, 404 for a released sandbox', async () => {
    expect(await statusOf(exec.exec(NS, 'box', { argv: ['sleep', '10'], timeoutSeconds: 1 }, caller))).toMatchObject({
      code: 504,
      reason: 'Timeout',
      message: expect.stringContaining(`sandbox ${NS}/box`),
    });
    expect(await statusOf(exec.exec(NS, 'box', { argv: ['definitely-not-a-command'] }, caller))).toMatchObject({ code: 400 });
    expect(await statusOf(exec.exec(NS, 'box', { argv: ['true'], cwd: '/no/such/dir' }, caller))).toMatchObject({ code: 400 });
    expect(await statusOf(exec.exec(NS, 'gone', { argv: ['true'] }, caller))).toMatchObject({ code: 404, reason: 'NotFound' });
    expect(await statusOf(exec.exec(NS, 'nobody', { argv: ['true'] }, caller))).toMatchObject({ code: 404 });
  });

  it('refuses a body that is not SandboxExecOptions with 400 before the node is asked', async () => {
    for (const body of [
      undefined,
      {},
      { argv: [] },
      { argv: ['x'], extra: 1 },
      { argv: ['x'], kind: 'Pod' },
      { argv: ['a\u0000b'] },
      { argv: ['x'], cwd: '../..' },
    ])
      expect(await statusOf(exec.exec(NS, 'box', body, caller))).toMatchObject({ code: 400, reason: 'BadRequest' });
  });
});

describe('files storage', () => {
  it('writes a streamed body, reads it back, lists and stats it, and deletes it', async () => {
    const data = randomBytes(700 * 1024);
    const info = await files.write(
      { namespace: NS, name: 'box', path: '/work/d/f.bin', tar: false, body: chunked(data, 64 * 1024) },
      caller,
    );
    expect(info).toMatchObject({ kind: 'SandboxFileInfo', path: '/work/d/f.bin', type: 'file', size: data.length });
    expect((await readAll('/work/d/f.bin')).bytes?.equals(data)).toBe(true);
    expect((await readAll('/work/d')).json).toMatchObject({
      kind: 'SandboxFileList',
      items: [{ name: 'f.bin', kind: 'file', size: data.length }],
    });
    expect((await readAll('/work/d/f.bin', { stat: true })).json).toMatchObject({ kind: 'SandboxFileInfo', size: data.length });
    expect(await statusOf(files.remove({ namespace: NS, name: 'box', path: '/work/d', recursive: false }, caller))).toMatchObject({
      code: 400,
    });
    await files.remove({ namespace: NS, name: 'box', path: '/work/d', recursive: true }, caller);
    expect(await statusOf(readAll('/work/d/f.bin'))).toMatchObject({ code: 404, message: expect.stringContaining(`sandbox ${NS}/box`) });
  });

  it('answers 413 for a body past the bound, declared or streamed, and writes nothing of it', async () => {
    const big = randomBytes(MAX + 1);
    const declared = files.write(
      { namespace: NS, name: 'box', path: '/big1', tar: false, contentLength: big.length, body: chunked(big, 1 << 16) },
      caller,
    );
    expect(await statusOf(declared)).toMatchObject({ code: 413, reason: 'RequestEntityTooLarge' });
    const streamed = files.write({ namespace: NS, name: 'box', path: '/big2', tar: false, body: chunked(big, 1 << 16) }, caller);
    expect(await statusOf(streamed)).toMatchObject({ code: 413, reason: 'RequestEntityTooLarge' });
    // the guest drops its temporary file once it sees the connection end without the end of the data
    await eventually(async () => {
      const root = (await readAll('/')).json as { items: { name: string }[] };
      expect(root.items.map((i) => i.name).filter((n) => n.includes('big'))).toEqual([]);
    });
  });

  it('round-trips a directory as a tar stream, and never deletes the root', async () => {
    await files.write({ namespace: NS, name: 'box', path: '/t/a.txt', tar: false, body: chunked(Buffer.from('A'), 1) }, caller);
    await files.write({ namespace: NS, name: 'box', path: '/t/s/b.txt', tar: false, body: chunked(Buffer.from('BB'), 1) }, caller);
    const tar = (await readAll('/t', { tar: true })).bytes ?? Buffer.alloc(0);
    await files.write({ namespace: NS, name: 'box', path: '/copy', tar: true, body: chunked(tar, 1000) }, caller);
    expect((await readAll('/copy/t/s/b.txt')).bytes?.toString()).toBe('BB');
    expect((await readAll('/copy/t/a.txt')).bytes?.toString()).toBe('A');
    expect(await statusOf(files.remove({ namespace: NS, name: 'box', path: '/', recursive: true }, caller))).toMatchObject({ code: 400 });
  });

  it('counts every request by operation and code', async () => {
    const page = await registry.metrics();
    expect(page).toMatch(/sandbox_scale_apiserver_data_plane_requests_total\{op="write",code="201"\} [1-9]/);
    expect(page).toMatch(/sandbox_scale_apiserver_data_plane_requests_total\{op="write",code="413"\} 2/);
    expect(page).toMatch(/sandbox_scale_apiserver_data_plane_requests_total\{op="exec",code="504"\} 1/);
  });
});

describe('portforward storage', () => {
  it("opens the node's relay to a guest port, and answers a port nothing listens on with 503", async () => {
    const socket = await ports.open(NS, 'box', 8888, caller);
    const answer = await new Promise<string>((resolve, reject) => {
      let text = '';
      socket.on('data', (c: Buffer) => (text += c.toString()));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
      socket.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    });
    socket.destroy();
    expect(answer).toContain('"status":"ok"');
    expect(await statusOf(ports.open(NS, 'box', 1, caller))).toMatchObject({ code: 503, reason: 'ServiceUnavailable' });
  });
});
