import { randomBytes } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AGENT_LIST_BATCH, asAgentError, isAgentError, type AgentConnection } from '@sandbox-scale/sandboxd-client';
import { caught, rawAgent, startDataSim, type DataSim } from './helpers';

async function readAll(a: AgentConnection, path: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of a.readFile(path)) chunks.push(c);
  return Buffer.concat(chunks);
}

const kindOf = async (p: Promise<unknown>): Promise<string | undefined> => asAgentError(await caught(p))?.kind;

describe('GET /v1/sandboxes/{id}/agent (silkd)', () => {
  let t: DataSim;
  let sb: { id: string; token: string };
  let agent: AgentConnection;
  let outside: string;

  beforeAll(async () => {
    t = await startDataSim();
    sb = await t.claim();
    agent = await t.root().openAgent(sb.id, sb.token);
    outside = mkdtempSync(join(tmpdir(), 'sim-outside-'));
  });
  afterAll(async () => {
    agent.close();
    rmSync(outside, { recursive: true, force: true });
    await t.close();
  });

  it.each([
    ['1 MiB', 1 << 20],
    ['10 MiB', 10 << 20],
  ])('writes a %s file in 256 KiB frames and reads it back byte for byte', async (_what, size) => {
    const data = randomBytes(size);
    await agent.writeFile('/work/blob.bin', data);
    const back = await readAll(agent, '/work/blob.bin');
    expect(back.length).toBe(size);
    expect(back.equals(data)).toBe(true);
    expect(lstatSync(join(t.rootOf(sb.id), 'work/blob.bin')).size).toBe(size);
  });

  it('writes from a stream of chunks of any size', async () => {
    async function* parts(): AsyncIterable<Buffer> {
      yield Buffer.from('a'.repeat(300_000));
      yield Buffer.from('b');
      yield Buffer.from('c'.repeat(70_000));
    }
    await agent.writeFile('streamed.txt', parts());
    const back = await readAll(agent, '/streamed.txt');
    expect(back.toString()).toBe(`${'a'.repeat(300_000)}b${'c'.repeat(70_000)}`);
  });

  it('lists, stats, makes parents, renames and removes recursively', async () => {
    await agent.mkdir('/tree/a/b', { parents: true });
    await agent.writeFile('/tree/a/b/f.txt', Buffer.from('hello'), { mode: 0o600 });
    expect(await agent.list('/tree/a/b')).toEqual([{ name: 'f.txt', kind: 'file', size: 5 }]);
    expect(await agent.stat('/tree/a/b/f.txt')).toMatchObject({ kind: 'file', size: 5, mode: 0o600 });
    expect((await agent.stat('/tree/a')).kind).toBe('dir');
    await agent.rename('/tree/a/b/f.txt', '/tree/g.txt');
    expect((await readAll(agent, 'tree/g.txt')).toString()).toBe('hello');
    expect(await kindOf(agent.remove('/tree'))).toBe('bad_request');
    await agent.remove('/tree', { recursive: true });
    expect(existsSync(join(t.rootOf(sb.id), 'tree'))).toBe(false);
    expect(await kindOf(agent.stat('/tree'))).toBe('not_found');
  });

  it('keeps the mode of a file it overwrites, atomically (no temp file left)', async () => {
    await agent.writeFile('/tool.sh', Buffer.from('#!/bin/sh\necho one\n'), { mode: 0o755 });
    await agent.writeFile('/tool.sh', Buffer.from('#!/bin/sh\necho two\n'), { mode: 0o600 });
    expect((await agent.stat('/tool.sh')).mode).toBe(0o755);
    expect(readdirSync(t.rootOf(sb.id)).filter((n) => n.endsWith('.tmp'))).toEqual([]);
    await expect(t.root().exec(sb.id, sb.token, { argv: ['./tool.sh'] })).resolves.toMatchObject({ stdout: 'two\n' });
  });

  // creating thousands of files takes seconds on a slow disk, hence the longer bound
  it('lists a directory of more than 4,096 entries in batches', async () => {
    const count = AGENT_LIST_BATCH + 4;
    const dir = join(t.rootOf(sb.id), 'many');
    mkdirSync(dir);
    for (let i = 0; i < count; i++) writeFileSync(join(dir, `f${i}`), '');
    const entries = await agent.list('/many');
    expect(entries).toHaveLength(count);
    const raw = await rawAgent(t.url(), sb.id, sb.token);
    raw.send({ v: 1, op: 'fs_list', path: '/many' });
    const sizes: number[] = [];
    for (let f = await raw.next(); f?.type === 'entries'; f = await raw.next()) sizes.push((f.entries as unknown[]).length);
    raw.close();
    expect(sizes).toEqual([AGENT_LIST_BATCH, 4]);
  }, 60_000);

  it.each([['../escape.txt'], ['/a/../../escape.txt'], ['/../../../tmp/escape.txt']])(
    'refuses %s, which escapes the root',
    async (path) => {
      const err = await caught(agent.writeFile(path, Buffer.from('x')));
      expect(isAgentError(err)).toBe(true);
      expect(asAgentError(err)?.kind).toBe('bad_request');
      expect(asAgentError(err)?.message).toMatch(/escapes the sandbox root/);
      expect(await kindOf(agent.stat(path))).toBe('bad_request');
    },
  );

  it('refuses a symbolic link out of the root, for reading, writing and listing through it', async () => {
    writeFileSync(join(outside, 'secret.txt'), 'outside');
    symlinkSync(outside, join(t.rootOf(sb.id), 'out'));
    expect(await kindOf(readAll(agent, '/out/secret.txt'))).toBe('bad_request');
    expect(await kindOf(agent.writeFile('/out/new.txt', Buffer.from('x')))).toBe('bad_request');
    expect(await kindOf(agent.list('/out'))).toBe('bad_request');
    expect(await kindOf(agent.remove('/out/secret.txt'))).toBe('bad_request');
    expect(readdirSync(outside)).toEqual(['secret.txt']);
    // the link itself is an entry of the root, reported as one
    expect((await agent.stat('/out')).kind).toBe('symlink');
  });

  it('replaces a symbolic link it writes over instead of writing through it', async () => {
    writeFileSync(join(outside, 'target.txt'), 'untouched');
    symlinkSync(join(outside, 'target.txt'), join(t.rootOf(sb.id), 'link.txt'));
    await agent.writeFile('/link.txt', Buffer.from('replaced'));
    expect(lstatSync(join(t.rootOf(sb.id), 'link.txt')).isFile()).toBe(true);
    expect((await readAll(agent, '/link.txt')).toString()).toBe('replaced');
    expect(readdirSync(outside).sort()).toEqual(['secret.txt', 'target.txt']);
  });

  it('answers bad_request for reading a directory or a FIFO, not_found for a missing file', async () => {
    await agent.exec({ argv: ['mkfifo', 'pipe'] });
    expect(await kindOf(readAll(agent, '/'))).toBe('bad_request');
    expect(await kindOf(readAll(agent, '/pipe'))).toBe('bad_request');
    expect(await kindOf(readAll(agent, '/missing'))).toBe('not_found');
    expect((await agent.stat('/pipe')).kind).toBe('other');
  });

  it('streams exec output and the exit code; the environment is cleared', async () => {
    const out: string[] = [];
    const r = await agent.exec(
      { argv: ['sh', '-c', 'echo out; echo err >&2; echo "$CI:${HOME:-none}"; exit 7'], env: { CI: 'yes' } },
      (s, d) => out.push(`${s}:${d.toString()}`),
    );
    expect(r.exitCode).toBe(7);
    expect(r.pid).toBeGreaterThan(0);
    expect(out.join('')).toContain('stdout:out\n');
    expect(out.join('')).toContain('stderr:err\n');
    expect(out.join('')).toContain('yes:none');
    expect(await kindOf(agent.exec({ argv: ['no-such-command-here'] }))).toBe('bad_request');
  });

  it('serves concurrent callers one after another on one connection, and resumes after a read stopped early', async () => {
    await agent.writeFile('/big.bin', randomBytes(3 << 20));
    for await (const chunk of agent.readFile('/big.bin')) {
      expect(chunk.length).toBeGreaterThan(0);
      break;
    }
    const stats = await Promise.all(Array.from({ length: 10 }, () => agent.stat('/big.bin')));
    expect(stats.map((s) => s.size)).toEqual(Array(10).fill(3 << 20));
  });

  it('answers hostile frames with bad_request and goes on: prototype keys, unknown ops, missing fields, bad JSON', async () => {
    const raw = await rawAgent(t.url(), sb.id, sb.token);
    raw.sendText('{"v":1,"op":"fs_stat","path":"/","__proto__":{"polluted":"yes"}}\n');
    expect(await raw.next()).toMatchObject({ type: 'error', kind: 'bad_request', message: expect.stringMatching(/prototype/) });
    raw.sendText('{"v":1,"op":"fs_stat","path":{"constructor":{"prototype":{"polluted":"yes"}}}}\n');
    expect(await raw.next()).toMatchObject({ type: 'error', kind: 'bad_request' });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    raw.send({ v: 1, op: 'format_disk' });
    expect(await raw.next()).toMatchObject({ type: 'error', kind: 'bad_request', message: expect.stringMatching(/unknown op/) });
    raw.send({ v: 1, op: 'fs_read' });
    expect(await raw.next()).toMatchObject({ type: 'error', kind: 'bad_request' });
    raw.sendText('not json\n');
    expect(await raw.next()).toMatchObject({ type: 'error', kind: 'bad_request' });
    raw.send({ v: 1, op: 'fs_stat', path: '/', extra: 'ignored' });
    expect(await raw.next()).toMatchObject({ type: 'stat', info: { kind: 'dir' } });
    expect(await raw.next()).toEqual({ type: 'done' });
    raw.close();
  });

  it('ends the connection after a frame past 8 MiB, with a last error frame', async () => {
    const raw = await rawAgent(t.url(), sb.id, sb.token);
    raw.sendText(`{"v":1,"op":"fs_stat","path":"${'a'.repeat((8 << 20) + 10)}"}\n`);
    expect(await raw.next()).toMatchObject({ type: 'error', kind: 'bad_request', message: expect.stringMatching(/exceeds/) });
    expect(await raw.next()).toBeUndefined();
    raw.close();
  });
});
