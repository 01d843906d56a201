import { createReadStream, createWriteStream } from 'node:fs';
import { chmod, lstat, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join, posix } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { CallOptions } from '../deadline';
import { isNotFound, SdkError } from '../errors';
import type { Sandbox } from '../sandbox';
import { extractTar, packDirectory } from '../tar';

/** Where cp reports what it left out (a socket, a link pointing outside the destination). */
export type SkipReport = (path: string, why: string) => void;

async function localKind(path: string): Promise<'dir' | 'file' | 'missing' | 'other'> {
  try {
    const st = await stat(path);
    return st.isDirectory() ? 'dir' : st.isFile() ? 'file' : 'other';
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'missing';
    throw err;
  }
}

/** The sandbox path a local file lands on: into PATH when PATH is a directory there (or ends with /), else PATH itself. */
async function remoteFileTarget(sb: Sandbox, local: string, remote: string, o: CallOptions): Promise<string> {
  if (remote.endsWith('/')) return posix.join(remote, basename(local));
  try {
    const info = await sb.files.stat(remote, o);
    return info.type === 'dir' ? posix.join(remote, basename(local)) : remote;
  } catch (err) {
    if (isNotFound(err)) return remote;
    throw err;
  }
}

/**
 * LOCAL -> NAME:PATH. A directory's contents go into PATH (created), as one tar through the
 * files subresource, as `kubectl cp` does; a file is streamed with its permission bits.
 */
export async function copyIn(sb: Sandbox, local: string, remote: string, o: CallOptions & { onSkip?: SkipReport }): Promise<void> {
  const kind = await localKind(local);
  if (kind === 'missing') throw new SdkError(`${local}: no such file or directory`);
  if (kind === 'other') throw new SdkError(`${local}: not a file or a directory`);
  if (kind === 'dir') {
    await sb.files.upload(remote, packDirectory(local, o.onSkip ? { onSkip: o.onSkip } : {}), o);
    return;
  }
  const target = await remoteFileTarget(sb, local, remote, o);
  const mode = (await stat(local)).mode & 0o777;
  await sb.files.write(target, createReadStream(local), { ...o, mode });
}

/** The local path a sandbox file lands on: into LOCAL when it is a directory here (or ends with /), else LOCAL itself. */
async function localFileTarget(remote: string, local: string): Promise<string> {
  const name = posix.basename(remote);
  if (local.endsWith('/') || (await localKind(local)) === 'dir') return join(local, name);
  return local;
}

/**
 * NAME:PATH -> LOCAL. A directory's contents go into LOCAL (created), from the files
 * subresource's tar of it; a file is streamed to a temporary name beside LOCAL and renamed, so
 * a copy cut short never leaves a partial file under LOCAL's name.
 */
export async function copyOut(sb: Sandbox, remote: string, local: string, o: CallOptions & { onSkip?: SkipReport }): Promise<void> {
  const info = await sb.files.stat(remote, o);
  if (info.type === 'dir') {
    // the tar names entries from the directory's parent (`base/…`); the root directory has no base
    const base = posix.basename(posix.normalize(remote));
    const strip = base === '/' || base === '.' || base === '' ? undefined : base;
    await extractTar(await sb.files.download(remote, o), local, { ...(strip ? { strip } : {}), ...(o.onSkip ? { onSkip: o.onSkip } : {}) });
    return;
  }
  const target = await localFileTarget(remote, local);
  if ((await lstat(dirname(target)).catch(() => undefined))?.isDirectory() !== true)
    throw new SdkError(`${dirname(target)}: no such directory`);
  const partial = join(dirname(target), `.${basename(target)}.${process.pid}.partial`);
  try {
    await pipeline(await sb.files.readStream(remote, o), createWriteStream(partial, { mode: 0o600, flags: 'wx' }));
    await chmod(partial, info.mode & 0o777 || 0o644);
    await rename(partial, target);
  } catch (err) {
    await rm(partial, { force: true });
    throw err;
  }
}
