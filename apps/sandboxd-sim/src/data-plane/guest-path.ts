import { lchown, lstat, mkdir, realpath } from 'node:fs/promises';
import type { GuestOwner } from './guest-ids';
import { join, sep } from 'node:path';

/** Why a guest path was refused or failed; the agent, exec and the guest runtime each map it to their answer. */
export type GuestPathProblem = 'bad_request' | 'escape' | 'not_found';

export class GuestPathError extends Error {
  override readonly name = 'GuestPathError';
  constructor(
    readonly problem: GuestPathProblem,
    message: string,
  ) {
    super(message);
  }
}

export function isGuestPathError(err: unknown): err is GuestPathError {
  return err instanceof Error && err.name === 'GuestPathError';
}

const escape = (path: string): GuestPathError => new GuestPathError('escape', `path escapes the sandbox root: ${JSON.stringify(path)}`);

/**
 * A guest path as segments under the root: `/` is the root, a relative path is relative to it.
 * `.` is dropped; `..` steps up, and a step above the root is refused (never clamped, so a caller
 * that meant the host's parent learns it). NUL and the empty path are refused.
 */
export function guestSegments(path: string): string[] {
  if (path === '') throw new GuestPathError('bad_request', 'empty path');
  if (path.includes('\0')) throw new GuestPathError('bad_request', 'path contains NUL');
  const out: string[] = [];
  for (const seg of path.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      if (out.length === 0) throw escape(path);
      out.pop();
    } else out.push(seg);
  }
  return out;
}

/** Whether `host` is `root` or lies under it (both real paths). */
export function isInside(root: string, host: string): boolean {
  return host === root || host.startsWith(root.endsWith(sep) ? root : root + sep);
}

/** A resolved guest path: `parent` is real and inside the root; `host` is `parent/name` (the root itself has no name). */
export interface ResolvedPath {
  guest: string;
  parent: string;
  /** '' for the root. */
  name: string;
  host: string;
}

function fsProblem(err: unknown, guest: string): GuestPathError | undefined {
  const code = (err as { code?: unknown }).code;
  if (code === 'ENOENT') return new GuestPathError('not_found', `no such file or directory: ${JSON.stringify(guest)}`);
  if (code === 'ENOTDIR') return new GuestPathError('bad_request', `not a directory on the way to ${JSON.stringify(guest)}`);
  if (code === 'ELOOP') return new GuestPathError('bad_request', `too many symbolic links in ${JSON.stringify(guest)}`);
  return undefined;
}

/** The real path of `host`, refused when it resolves outside the root (a symbolic link out of it). */
export async function realInside(root: string, host: string, guest: string): Promise<string> {
  let real: string;
  try {
    real = await realpath(host);
  } catch (err) {
    throw fsProblem(err, guest) ?? err;
  }
  if (!isInside(root, real)) throw escape(guest);
  return real;
}

/**
 * Resolves a guest path with its parent directory's symbolic links followed (and checked to stay
 * inside the root) and the last component left as it is, for operations that act on a name
 * (write, remove, rename, lstat). `root` is the root's real path.
 */
export async function resolveName(root: string, guest: string): Promise<ResolvedPath> {
  const segs = guestSegments(guest);
  const name = segs.pop();
  if (name === undefined) return { guest, parent: root, name: '', host: root };
  const parent = await realInside(root, join(root, ...segs), guest);
  return { guest, parent, name, host: join(parent, name) };
}

/** Resolves a guest path with every symbolic link followed, refused when the target leaves the root. */
export async function resolveFollow(root: string, guest: string): Promise<string> {
  return realInside(root, join(root, ...guestSegments(guest)), guest);
}

/**
 * `mkdir -p` under the root, one component at a time, so a symbolic link on the way is followed
 * only when it stays inside the root. Returns the real path of the directory.
 */
export async function ensureDir(
  root: string,
  guest: string,
  owner: GuestOwner | undefined,
  segs: readonly string[] = guestSegments(guest),
): Promise<string> {
  let at = root;
  for (const seg of segs) {
    const next = join(at, seg);
    const st = await lstat(next).catch((err: unknown) => {
      if ((err as { code?: unknown }).code === 'ENOENT') return undefined;
      throw err;
    });
    if (st === undefined) {
      const made = await mkdir(next).then(
        () => true,
        (err: unknown) => {
          if ((err as { code?: unknown }).code !== 'EEXIST') throw err;
          return false;
        },
      );
      if (made && owner !== undefined) await lchown(next, owner.uid, owner.gid);
      at = await realInside(root, next, guest);
    } else if (st.isSymbolicLink()) at = await realInside(root, next, guest);
    else if (st.isDirectory()) at = next;
    else throw new GuestPathError('bad_request', `not a directory: ${JSON.stringify(seg)} in ${JSON.stringify(guest)}`);
    if (!(await lstat(at)).isDirectory()) throw new GuestPathError('bad_request', `not a directory: ${JSON.stringify(guest)}`);
  }
  return at;
}
