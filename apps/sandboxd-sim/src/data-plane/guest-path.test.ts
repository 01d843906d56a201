import { mkdtempSync, mkdirSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureDir, guestSegments, isGuestPathError, isInside, resolveFollow, resolveName } from './guest-path';

async function problemOf(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
  } catch (err) {
    return isGuestPathError(err) ? err.problem : 'other';
  }
  return undefined;
}

describe('guest paths', () => {
  let base: string;
  let root: string;
  let outside: string;
  beforeAll(() => {
    base = realpathSync(mkdtempSync(join(tmpdir(), 'guest-path-')));
    root = join(base, 'root');
    outside = join(base, 'outside');
    mkdirSync(join(root, 'a/b'), { recursive: true });
    mkdirSync(outside);
    symlinkSync(outside, join(root, 'out'));
    symlinkSync('a/b', join(root, 'in'));
  });
  afterAll(() => rmSync(base, { recursive: true, force: true }));

  it.each([
    ['/', []],
    ['.', []],
    ['/a/./b/', ['a', 'b']],
    ['a/b/../c', ['a', 'c']],
  ])('reads %j as segments %j under the root', (path, segs) => {
    expect(guestSegments(path)).toEqual(segs);
  });

  it.each([['..'], ['/..'], ['a/../../b'], ['/../etc/passwd']])('refuses %j, which steps above the root', (path) => {
    expect(() => guestSegments(path)).toThrow(/escapes the sandbox root/);
  });

  it('refuses the empty path and NUL', () => {
    expect(() => guestSegments('')).toThrow(/empty/);
    expect(() => guestSegments('a\0b')).toThrow(/NUL/);
  });

  it('tells a root from a sibling that shares its prefix', () => {
    expect(isInside('/r/root', '/r/root')).toBe(true);
    expect(isInside('/r/root', '/r/root/x')).toBe(true);
    expect(isInside('/r/root', '/r/rootkit')).toBe(false);
  });

  it('follows links that stay inside the root and refuses those that leave it', async () => {
    expect(await resolveFollow(root, '/in')).toBe(join(root, 'a/b'));
    expect(await problemOf(resolveFollow(root, '/out'))).toBe('escape');
    expect(await problemOf(resolveName(root, '/out/x'))).toBe('escape');
    expect((await resolveName(root, '/out')).host).toBe(join(root, 'out'));
    expect(await problemOf(resolveFollow(root, '/missing'))).toBe('not_found');
  });

  it('makes parents one component at a time, never through a link out of the root', async () => {
    expect(await ensureDir(root, '/in/c/d', undefined)).toBe(join(root, 'a/b/c/d'));
    expect(await problemOf(ensureDir(root, '/out/new', undefined))).toBe('escape');
  });
});
