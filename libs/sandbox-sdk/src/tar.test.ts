import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { encodeTarHeader, TAR_END, tarPadding, type TarHeaderEntry } from '@sandbox-scale/scale-core';
import { isArchiveError, isSdkError } from './errors';
import { extractTar, packDirectory } from './tar';
import { describeTree, writeTree } from './testing';

let work: string;
beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), 'sdk-tar-'));
});
afterEach(() => rmSync(work, { recursive: true, force: true }));

const LONG = `${'d'.repeat(60)}/${'e'.repeat(70)}/${'f'.repeat(90)}.txt`;
const PAX_NAME = `${'g'.repeat(150)}.txt`;

/** work/src: a tree with a nested directory, an empty one, an executable, a long path, symlinks and a binary file. */
function srcTree(): string {
  const root = join(work, 'src');
  writeTree(root, {
    'a.txt': 'hello\n',
    empty: { dir: true },
    'nested/deeper/c.bin': randomBytes(100_003),
    'nested/zero': '',
    // one component over ustar's 100-byte name field: only a pax header can carry it, and its link target
    [`nested/${PAX_NAME}`]: 'pax\n',
    'run.sh': { data: '#!/bin/sh\necho hi\n', mode: 0o755 },
    [LONG]: 'far down\n',
    link: { symlink: 'a.txt' },
    paxlink: { symlink: `nested/${PAX_NAME}` },
  });
  return root;
}

type Entry = TarHeaderEntry & { body?: Buffer };

function archive(entries: Entry[]): Readable {
  const blocks: Buffer[] = [];
  for (const e of entries) {
    blocks.push(encodeTarHeader(e));
    if (e.body) blocks.push(e.body, tarPadding(e.body.length));
  }
  blocks.push(TAR_END);
  return Readable.from([Buffer.concat(blocks)]);
}
const entry = (path: string, type: Entry['type'], extra: Partial<Entry> = {}): Entry => ({
  path,
  type,
  mode: 0o644,
  size: extra.body?.length ?? 0,
  mtimeSecs: 0,
  ...extra,
});

describe('packDirectory and extractTar', () => {
  it('round-trips a tree: a nested and an empty directory, a 0755 file, a long path, a symlink', async () => {
    const src = srcTree();
    const dst = join(work, 'dst');
    const result = await extractTar(packDirectory(src), dst);
    expect(describeTree(dst)).toEqual(describeTree(src));
    expect(describeTree(dst)['run.sh']).toMatch(/^file 755 /);
    expect(describeTree(dst)['empty']).toBe('dir 755');
    expect(result).toEqual({ files: 6, dirs: 5, symlinks: 2, skipped: 0 });
  });

  it('packs a directory GNU tar unpacks as the same tree, and unpacks what GNU tar packs (gnu and pax), its base stripped', async () => {
    const src = srcTree();
    const ours = join(work, 'ours.tar');
    const chunks: Buffer[] = [];
    for await (const c of packDirectory(src)) chunks.push(c as Buffer);
    writeFileSync(ours, Buffer.concat(chunks));
    const listed = execFileSync('tar', ['-tf', ours], { encoding: 'utf8' }).split('\n').filter(Boolean);
    expect(listed).toContain(`nested/${PAX_NAME}`);
    expect(listed).toContain('empty/');
    const byTar = join(work, 'by-tar');
    mkdirSync(byTar);
    execFileSync('tar', ['-xf', ours, '-C', byTar]);
    expect(describeTree(byTar)).toEqual(describeTree(src));

    for (const format of ['gnu', 'pax']) {
      const theirs = join(work, `${format}.tar`);
      execFileSync('tar', [`--format=${format}`, '-cf', theirs, '-C', work, 'src']);
      const dst = join(work, `from-${format}`);
      await extractTar(Readable.from([readFileSync(theirs)]), dst, { strip: 'src' });
      expect(describeTree(dst)).toEqual(describeTree(src));
    }
  });

  it.each([
    ['a path with ..', [entry('../evil', 'file', { body: Buffer.from('x') })], /leaves the directory/],
    ['an entry outside the stripped base', [entry('other/a', 'file', { body: Buffer.from('x') })], /not under "base\/"/],
  ])('refuses %s and writes nothing outside', async (_what, entries, message) => {
    const dst = join(work, 'dst');
    const err: unknown = await extractTar(archive(entries), dst, { strip: 'base' }).catch((e: unknown) => e);
    // an SdkError too, so the plugin prints the message rather than a stack
    expect({ archive: isArchiveError(err), sdk: isSdkError(err) }).toEqual({ archive: true, sdk: true });
    expect((err as Error).message).toMatch(message);
    expect(existsSync(join(work, 'evil'))).toBe(false);
    expect(readdirSync(dst)).toEqual([]);
  });

  it('never writes through a symlink, and skips links that point outside', async () => {
    const outside = join(work, 'outside');
    mkdirSync(outside);
    const dst = join(work, 'dst');
    mkdirSync(dst);
    symlinkSync(outside, join(dst, 'out'));
    const skipped: string[] = [];
    const links = archive([
      entry('up', 'symlink', { linkname: '../outside' }),
      entry('abs', 'symlink', { linkname: '/etc' }),
      entry('ok', 'symlink', { linkname: 'sub/../x' }),
    ]);
    const r = await extractTar(links, dst, { onSkip: (p, why) => skipped.push(`${p}: ${why}`) });
    expect(r).toEqual({ files: 0, dirs: 0, symlinks: 1, skipped: 2 });
    expect(skipped).toEqual([
      'up: a symlink to "../outside", outside the destination',
      'abs: a symlink to "/etc", outside the destination',
    ]);

    const through = archive([entry('out/x', 'file', { body: Buffer.from('x') })]);
    const err: unknown = await extractTar(through, dst).catch((e: unknown) => e);
    expect(isArchiveError(err)).toBe(true);
    expect(readdirSync(outside)).toEqual([]);
  });
});
