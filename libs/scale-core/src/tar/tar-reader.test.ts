import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  encodeTarHeader,
  isArchiveError,
  MAX_TAR_META_BYTES,
  TAR_BLOCK,
  TAR_END,
  tarPadding,
  type TarHeaderEntry,
  writeChecksum,
} from './tar-format';
import { readTar } from './tar-reader';

type Item = TarHeaderEntry & { body?: Buffer };

const LONG = `${'d'.repeat(60)}/${'e'.repeat(70)}/${'f'.repeat(90)}.txt`;
const PAX_NAME = `${'g'.repeat(150)}.txt`;

const item = (path: string, type: Item['type'], extra: Partial<Item> = {}): Item => ({
  path,
  type,
  mode: type === 'dir' ? 0o755 : 0o644,
  size: extra.body?.length ?? 0,
  mtimeSecs: 1_700_000_000,
  ...extra,
});

/**
 * A tree with what tar has to work for: nested and empty directories, modes, a path past 100
 * bytes, a component past 100 bytes (pax or GNU long name only), a non-ASCII name, an empty and
 * a binary file, and symlinks, one with a target past 100 bytes. Parents come before children.
 */
const TREE: Item[] = [
  item('a.txt', 'file', { body: Buffer.from('hello\n') }),
  item('run.sh', 'file', { mode: 0o755, body: Buffer.from('#!/bin/sh\necho hi\n') }),
  item('empty', 'dir', { mode: 0o700 }),
  item('nested', 'dir'),
  item('nested/deeper', 'dir', { mode: 0o750 }),
  item('nested/deeper/c.bin', 'file', { mode: 0o600, body: randomBytes(100_003) }),
  item('nested/zero', 'file', { body: Buffer.alloc(0) }),
  item(`nested/${PAX_NAME}`, 'file', { body: Buffer.from('pax\n') }),
  item('d'.repeat(60), 'dir'),
  item(`${'d'.repeat(60)}/${'e'.repeat(70)}`, 'dir'),
  item(LONG, 'file', { body: Buffer.from('far down\n') }),
  item('ünï.txt', 'file', { body: Buffer.from('utf8\n') }),
  item('link', 'symlink', { linkname: 'a.txt' }),
  item('paxlink', 'symlink', { linkname: `nested/${PAX_NAME}` }),
];

/** One line per entry, alike for what was written, what readTar reads and what is on disk. */
const line = (type: string, mode: number, content: string): string =>
  type === 'symlink' ? `symlink -> ${content}` : `${type} ${(mode & 0o777).toString(8)} ${content}`.trimEnd();
const itemLine = (i: Item): string => line(i.type, i.mode, i.type === 'symlink' ? (i.linkname ?? '') : (i.body?.toString('base64') ?? ''));
const WANT = Object.fromEntries(TREE.map((i) => [i.path, itemLine(i)]));

function archive(items: Item[]): Buffer {
  const blocks: Buffer[] = [];
  for (const i of items) blocks.push(encodeTarHeader(i), ...(i.body ? [i.body, tarPadding(i.body.length)] : []));
  return Buffer.concat([...blocks, TAR_END]);
}

/** The archive in chunks of `size` bytes, as a request body or a file stream arrives. */
async function* inChunks(b: Buffer, size: number): AsyncGenerator<Buffer> {
  for (let at = 0; at < b.length; at += size) yield b.subarray(at, at + size);
}

/** Every entry read, by path; the archive's own `./` left out. */
async function readAll(source: AsyncIterable<Buffer>): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for await (const { entry, body } of readTar(source)) {
    const chunks: Buffer[] = [];
    for await (const c of body) chunks.push(c);
    const content = entry.type === 'symlink' || entry.type === 'hardlink' ? entry.linkname : Buffer.concat(chunks).toString('base64');
    if (entry.path !== '') out[entry.path] = line(entry.type, entry.mode, content);
  }
  return out;
}

async function refusal(source: AsyncIterable<Buffer>): Promise<Error> {
  const err: unknown = await readAll(source).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isArchiveError(err)) throw new Error(`expected an ArchiveError, got ${String(err)}`);
  return err as Error;
}

/** A header with bytes rewritten and its checksum made good, as another writer would have written it. */
function patched(header: Buffer, at: number, text: string): Buffer {
  const out = Buffer.from(header);
  out.write(text, at, 'latin1');
  writeChecksum(out);
  return out;
}

let work: string;
beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), 'scale-core-tar-'));
});
afterEach(() => rmSync(work, { recursive: true, force: true }));

function writeTree(root: string): void {
  for (const i of TREE) {
    const path = join(root, i.path);
    if (i.type === 'dir') mkdirSync(path);
    else if (i.type === 'symlink') symlinkSync(i.linkname ?? '', path);
    else writeFileSync(path, i.body ?? Buffer.alloc(0));
    if (i.type !== 'symlink') chmodSync(path, i.mode);
  }
}

function onDisk(path: string): string {
  const st = lstatSync(path);
  if (st.isSymbolicLink()) return line('symlink', 0, readlinkSync(path));
  return st.isDirectory() ? line('dir', st.mode, '') : line('file', st.mode, readFileSync(path).toString('base64'));
}

describe('readTar', () => {
  it('reads back what encodeTarHeader writes, whatever the chunking', async () => {
    const tar = archive(TREE);
    expect(tar.length % TAR_BLOCK).toBe(0);
    for (const size of [1, 7, 511, 512, 4099, tar.length]) expect(await readAll(inChunks(tar, size))).toEqual(WANT);
  });

  it('skips what a consumer leaves of an entry and goes on with the next', async () => {
    const tar = archive([item('a', 'file', { body: Buffer.alloc(5000, 'x') }), item('b', 'file', { body: Buffer.from('second') })]);
    const names: string[] = [];
    let second = '';
    for await (const { entry, body } of readTar(inChunks(tar, 300))) {
      names.push(entry.path);
      if (entry.path === 'b') for await (const c of body) second += c.toString();
      else for await (const c of body) if (c.length > 0) break;
    }
    expect({ names, second }).toEqual({ names: ['a', 'b'], second: 'second' });
  });

  it('ends at the first zero block and closes the stream there; an empty stream has no entries', async () => {
    let closed = false;
    let pulledAfterEnd = false;
    async function* source(): AsyncGenerator<Buffer> {
      try {
        yield archive([item('a', 'file', { body: Buffer.from('x') })]);
        pulledAfterEnd = true;
        yield Buffer.from('not read');
      } finally {
        closed = true;
      }
    }
    expect(Object.keys(await readAll(source()))).toEqual(['a']);
    expect({ closed, pulledAfterEnd }).toEqual({ closed: true, pulledAfterEnd: false });
    expect(await readAll(inChunks(Buffer.alloc(0), 1))).toEqual({});
    expect(await readAll(inChunks(TAR_END, 100))).toEqual({});
  });

  it.each(['gnu', 'oldgnu', 'pax'])('reads what GNU tar writes in its %s format: long names, long link targets, modes', async (format) => {
    const src = join(work, 'src');
    mkdirSync(src);
    writeTree(src);
    const tar = execFileSync('tar', [`--format=${format}`, '-cf', '-', '-C', src, '.'], { maxBuffer: 16 * 1024 * 1024 });
    expect(await readAll(inChunks(tar, 10_240))).toEqual(WANT);
  });

  it('writes what GNU tar lists and unpacks as the same tree', () => {
    const tar = archive(TREE);
    const listed = execFileSync('tar', ['-tf', '-'], { input: tar, encoding: 'utf8' }).split('\n').filter(Boolean);
    expect(listed).toEqual(TREE.map((i) => (i.type === 'dir' ? `${i.path}/` : i.path)));
    const out = join(work, 'out');
    mkdirSync(out);
    execFileSync('tar', ['-xf', '-', '-C', out], { input: tar });
    expect(Object.fromEntries(TREE.map((i) => [i.path, onDisk(join(out, i.path))]))).toEqual(WANT);
  });

  it.each([
    ['a .. path', item('../evil', 'file'), /leaves the directory/],
    ['a .. inside a path', item('top/../../evil', 'dir'), /leaves the directory/],
    ['an absolute path', item('/etc/evil', 'file'), /absolute path/],
    ['a pax path with a NUL', item('a\0b', 'file'), /holds a NUL/],
    ['an absolute path on a hard link', item('/etc/hard', 'hardlink', { linkname: 'a' }), /absolute path/],
  ])('refuses an entry with %s', async (_what, hostile, message) => {
    const tar = archive([item('ok', 'file', { body: Buffer.from('x') }), hostile]);
    expect((await refusal(inChunks(tar, 512))).message).toMatch(message);
  });

  it('refuses the paths GNU tar writes with -P: climbing out with ../, or absolute', async () => {
    const src = join(work, 'src');
    mkdirSync(src);
    writeFileSync(join(src, 'a.txt'), 'x');
    const climbing = execFileSync('tar', ['-C', src, '-cf', '-', '-P', '--transform', 's,^,../../,', 'a.txt']);
    expect((await refusal(inChunks(climbing, 512))).message).toMatch(/tar entry "..\/..\/a.txt" leaves the directory/);
    const absolute = execFileSync('tar', ['-cf', '-', '-P', join(src, 'a.txt')]);
    expect((await refusal(inChunks(absolute, 512))).message).toMatch(/absolute path/);
  });

  it('refuses a stream cut short in a header, a body or an extended header, and one that is not tar', async () => {
    const tar = archive([item('a', 'file', { body: Buffer.alloc(2000, 1) })]);
    expect((await refusal(inChunks(tar.subarray(0, 300), 64))).message).toMatch(/truncated tar archive: a header ends early/);
    expect((await refusal(inChunks(tar.subarray(0, 1200), 64))).message).toMatch(/truncated tar archive: an entry ends early/);
    const pax = archive([item(PAX_NAME, 'file')]);
    expect((await refusal(inChunks(pax.subarray(0, TAR_BLOCK + 20), 64))).message).toMatch(/an extended header ends early/);
    expect((await refusal(inChunks(Buffer.alloc(1024, 'x'), 64))).message).toMatch(/checksum/);
  });

  it('holds at most MAX_TAR_META_BYTES of an extended header or GNU long name, refusing a bigger one before reading it', async () => {
    const big = 'p'.repeat(MAX_TAR_META_BYTES - 100);
    expect(Object.keys(await readAll(inChunks(archive([item(big, 'file')]), 4096)))).toEqual([big]);
    const header = encodeTarHeader(item('meta', 'file', { size: MAX_TAR_META_BYTES + 1 }));
    for (const typeflag of ['x', 'g', 'L', 'K']) {
      const err = await refusal(inChunks(patched(header, 156, typeflag), 512));
      expect(err.message).toBe(`tar archive has a ${MAX_TAR_META_BYTES + 1}-byte extended header; at most ${MAX_TAR_META_BYTES} are read`);
    }
  });

  it('reads no body after a link, a device or a FIFO whatever its size says, and skips the body of an unknown type', async () => {
    const withSize = (i: Item, typeflag: string, size: number): Buffer =>
      patched(patched(encodeTarHeader(i), 124, `${size.toString(8).padStart(11, '0')}\0`), 156, typeflag);
    const tar = Buffer.concat([
      withSize(item('s', 'symlink', { linkname: 'a' }), '2', 1000),
      withSize(item('h', 'hardlink', { linkname: 'a' }), '1', 1000),
      withSize(item('dev', 'file'), '3', 1000),
      withSize(item('fifo', 'file'), '6', 1000),
      withSize(item('weird', 'file'), 'Z', 5),
      Buffer.from('body!'),
      tarPadding(5),
      archive([item('after', 'file', { body: Buffer.from('y') })]),
    ]);
    const types: string[] = [];
    for await (const { entry } of readTar(inChunks(tar, 512))) types.push(`${entry.path} ${entry.type} ${entry.size}`);
    expect(types).toEqual(['s symlink 0', 'h hardlink 0', 'dev other 0', 'fifo other 0', 'weird other 5', 'after file 1']);
  });
});
