import { randomBytes } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { lstat, open, readdir, rename, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import type { GuestOwner } from './guest-ids';
import { GuestPathError, ensureDir, guestSegments, resolveFollow, resolveName } from './guest-path';

const DEFAULT_FILE_MODE = 0o644;
export const PERMISSION_BITS = 0o7777;

export async function lstatOrUndefined(path: string): Promise<Stats | undefined> {
  try {
    return await lstat(path);
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Where an atomic write lands: the target, the temp file beside it, and the mode the file gets. */
export interface WriteTarget {
  host: string;
  temp: string;
  mode: number;
  /** Who the file belongs to (the sandbox's uid); undefined = the simulator's user. */
  owner: GuestOwner | undefined;
}

/**
 * Prepares an atomic write of a guest path: parent directories created (inside the root), the
 * target refused when it is a directory, the mode of a file it overwrites kept (else `mode`, else
 * 0644). A symbolic link in the target's place is replaced, never followed.
 */
export async function writeTarget(root: string, path: string, owner: GuestOwner | undefined, mode?: number | null): Promise<WriteTarget> {
  const segs = guestSegments(path);
  const name = segs.pop();
  if (name === undefined) throw new GuestPathError('bad_request', 'cannot write the sandbox root');
  const parent = await ensureDir(root, path, owner, segs);
  const host = join(parent, name);
  const existing = await lstatOrUndefined(host);
  if (existing?.isDirectory()) throw new GuestPathError('bad_request', `is a directory: ${JSON.stringify(path)}`);
  const kept = existing?.isFile() ? existing.mode & PERMISSION_BITS : undefined;
  return { host, temp: join(parent, `.${name}.${randomBytes(6).toString('hex')}.tmp`), mode: kept ?? mode ?? DEFAULT_FILE_MODE, owner };
}

/** The temp file, created exclusively (never through a link). */
export function openTemp(target: WriteTarget): Promise<FileHandle> {
  return open(target.temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
}

/** Closes the temp file, then renames it over the target, or removes it when the write failed. */
export async function commitTemp(file: FileHandle, target: WriteTarget, ok: boolean): Promise<void> {
  try {
    if (ok && target.owner !== undefined) await file.chown(target.owner.uid, target.owner.gid);
    if (ok) await file.chmod(target.mode);
  } finally {
    await file.close();
  }
  if (ok) await rename(target.temp, target.host);
  else await unlink(target.temp).catch(() => undefined);
}

export async function writeAtomic(root: string, path: string, data: Buffer, owner: GuestOwner | undefined): Promise<void> {
  const target = await writeTarget(root, path, owner);
  const file = await openTemp(target);
  let ok = false;
  try {
    await file.writeFile(data);
    ok = true;
  } finally {
    await commitTemp(file, target, ok);
  }
}

/** Opens a regular file for reading; a directory, device or FIFO is refused (bad_request). */
export async function openRegular(root: string, path: string): Promise<{ file: FileHandle; size: number }> {
  const host = await resolveFollow(root, path);
  // O_NONBLOCK: opening a FIFO must not wait for a writer; O_NOFOLLOW: no link swapped in since
  const file = await open(host, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  const st = await file.stat();
  if (!st.isFile()) {
    await file.close();
    throw new GuestPathError('bad_request', `not a regular file: ${JSON.stringify(path)}`);
  }
  return { file, size: st.size };
}

/** The runtime's listing entry. */
export interface RuntimeEntry {
  name: string;
  size: number;
  type: 'file' | 'directory';
  mod_time: number;
}

export async function listDir(root: string, path: string): Promise<RuntimeEntry[]> {
  const dir = await resolveFollow(root, path);
  const names = await readdir(dir);
  const out: RuntimeEntry[] = [];
  for (const name of names.sort()) {
    const st = await lstatOrUndefined(join(dir, name));
    if (st !== undefined) out.push({ name, size: st.size, type: st.isDirectory() ? 'directory' : 'file', mod_time: st.mtimeMs / 1000 });
  }
  return out;
}

/** The entry at a guest path (a link itself, not its target), or undefined when there is none. */
export async function pathInfo(root: string, path: string): Promise<Stats | undefined> {
  try {
    return await lstatOrUndefined((await resolveName(root, path)).host);
  } catch (err) {
    if (err instanceof GuestPathError && err.problem === 'not_found') return undefined;
    throw err;
  }
}
