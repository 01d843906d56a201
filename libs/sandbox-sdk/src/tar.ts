import { createReadStream, createWriteStream } from 'node:fs';
import { chmod, lstat, mkdir, readdir, readlink, realpath, rm, symlink, unlink } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ArchiveError, encodeTarHeader, readTar, TAR_END, tarPadding, type TarEntry } from '@sandbox-scale/scale-core';

export interface PackOptions {
  /** An entry that cannot go into a tar (a socket, a FIFO, a device) is left out and named here. */
  onSkip?: (path: string, why: string) => void;
}

/** A file's bytes, exactly `size` of them: one that shrinks while it is read would misalign every entry after it. */
async function* fileBody(path: string, size: number): AsyncGenerator<Buffer> {
  let sent = 0;
  if (size > 0) {
    for await (const chunk of createReadStream(path, { start: 0, end: size - 1 }) as AsyncIterable<Buffer>) {
      sent += chunk.length;
      yield chunk;
    }
  }
  if (sent !== size) throw new ArchiveError(`${path} changed size while it was being packed (${sent} of ${size} bytes)`);
  const pad = tarPadding(size);
  if (pad.length > 0) yield pad;
}

async function* walk(root: string, rel: string, o: PackOptions): AsyncGenerator<Buffer> {
  const names = (await readdir(rel ? join(root, rel) : root)).sort();
  for (const name of names) {
    const path = rel ? `${rel}/${name}` : name;
    const full = join(root, path);
    const st = await lstat(full);
    const base = { path, mode: st.mode & 0o7777, mtimeSecs: Math.floor(st.mtimeMs / 1000), size: 0 };
    if (st.isDirectory()) {
      yield encodeTarHeader({ ...base, type: 'dir' });
      yield* walk(root, path, o);
    } else if (st.isFile()) {
      yield encodeTarHeader({ ...base, type: 'file', size: st.size });
      yield* fileBody(full, st.size);
    } else if (st.isSymbolicLink()) {
      yield encodeTarHeader({ ...base, type: 'symlink', linkname: await readlink(full) });
    } else o.onSkip?.(path, 'not a file, directory or symlink');
  }
}

/**
 * A tar of what `dir` holds, paths relative to it (`a.txt`, `sub/b.txt`, `empty/`), as
 * `tar -C dir -cf - .` would pack it without the leading `./`. Modes are kept; owners are not
 * (the unpacking side owns what it writes). Symlinks go in as links, never followed.
 */
export function packDirectory(dir: string, o: PackOptions = {}): Readable {
  async function* all(): AsyncGenerator<Buffer> {
    yield* walk(dir, '', o);
    yield TAR_END;
  }
  return Readable.from(all(), { objectMode: false });
}

export interface ExtractOptions {
  /**
   * A first path component every entry must have, removed before writing: a tar of `base`
   * (`base/`, `base/a.txt`) unpacks as dest/a.txt. An entry outside it is refused.
   */
  strip?: string;
  /** An entry left out on purpose (a link pointing outside dest, a device) is named here. */
  onSkip?: (path: string, why: string) => void;
}

export interface ExtractResult {
  files: number;
  dirs: number;
  symlinks: number;
  skipped: number;
}

/** The components of an entry's path under dest (readTar has refused absolute and `..` paths), `strip` removed. */
function entryParts(path: string, strip: string | undefined): string[] {
  const parts = path === '' ? [] : path.split('/');
  if (strip === undefined || strip === '') return parts;
  if (parts[0] !== strip) throw new ArchiveError(`tar entry "${path}" is not under "${strip}/"`);
  return parts.slice(1);
}

/** Creates dest/parts… as real directories; one that is a symlink (or a file) is refused, so nothing is written through it. */
async function ensureDirs(root: string, parts: string[]): Promise<void> {
  let cur = root;
  for (const part of parts) {
    cur = join(cur, part);
    const st = await lstat(cur).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    });
    if (st === undefined) await mkdir(cur, { mode: 0o755 });
    else if (!st.isDirectory()) throw new ArchiveError(`${cur} is not a directory (a symlink or a file stands there)`);
  }
}

/** Removes what stands at `path` unless it is a directory; a directory where a file goes is refused. */
async function clearFor(path: string, type: 'file' | 'symlink'): Promise<void> {
  const st = await lstat(path).catch(() => undefined);
  if (st === undefined) return;
  if (st.isDirectory()) throw new ArchiveError(`${path} is a directory; the archive has a ${type} there`);
  await unlink(path);
}

/** Whether a symlink at `rel` pointing to `target` stays inside dest. */
function linkStaysInside(rel: string[], target: string): boolean {
  if (target.startsWith('/') || target.includes('\0')) return false;
  const resolved = posix.normalize(posix.join(...rel.slice(0, -1), target));
  return resolved !== '..' && !resolved.startsWith('../');
}

/**
 * Unpacks a tar stream into dest (created): files with their modes, directories (an empty one
 * too), symlinks whose targets stay inside dest. Nothing is written outside dest: absolute and
 * `..` paths are refused (by readTar), as is a path through a symlink; hard links, devices and
 * FIFOs are skipped. Directory modes are set last, so a read-only directory still gets its contents.
 */
export async function extractTar(source: AsyncIterable<Buffer>, dest: string, o: ExtractOptions = {}): Promise<ExtractResult> {
  await mkdir(dest, { recursive: true });
  const root = await realpath(dest);
  const result: ExtractResult = { files: 0, dirs: 0, symlinks: 0, skipped: 0 };
  const dirModes: Array<[string, number]> = [];
  const skip = (path: string, why: string): void => {
    result.skipped++;
    o.onSkip?.(path, why);
  };
  for await (const { entry, body } of readTar(source)) {
    const parts = entryParts(entry.path, o.strip);
    await extractEntry(root, parts, entry, body, { result, dirModes, skip });
  }
  // deepest first, so a directory made read-only does not block setting the modes below it
  for (const [path, mode] of dirModes.sort((a, b) => b[0].length - a[0].length)) await chmod(path, mode);
  return result;
}

interface ExtractState {
  result: ExtractResult;
  dirModes: Array<[string, number]>;
  skip: (path: string, why: string) => void;
}

async function extractEntry(root: string, parts: string[], entry: TarEntry, body: AsyncIterable<Buffer>, s: ExtractState): Promise<void> {
  const target = join(root, ...parts);
  if (entry.type === 'dir') {
    await ensureDirs(root, parts);
    s.dirModes.push([target, entry.mode & 0o777]);
    s.result.dirs++;
    return;
  }
  if (parts.length === 0) throw new ArchiveError(`tar entry "${entry.path}" is a ${entry.type} where the directory itself goes`);
  if (entry.type === 'hardlink' || entry.type === 'other') {
    s.skip(entry.path, entry.type === 'hardlink' ? 'a hard link' : 'not a file, directory or symlink');
    return;
  }
  await ensureDirs(root, parts.slice(0, -1));
  if (entry.type === 'symlink') {
    if (!linkStaysInside(parts, entry.linkname)) {
      s.skip(entry.path, `a symlink to "${entry.linkname}", outside the destination`);
      return;
    }
    await clearFor(target, 'symlink');
    await symlink(entry.linkname, target);
    s.result.symlinks++;
    return;
  }
  await clearFor(target, 'file');
  try {
    await pipeline(Readable.from(body), createWriteStream(target, { mode: 0o600, flags: 'wx' }));
  } catch (err) {
    await rm(target, { force: true });
    throw err;
  }
  await chmod(target, entry.mode & 0o777);
  s.result.files++;
}
