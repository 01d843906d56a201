import { BadRequestError, encodeTarHeader, readTar, TAR_END, tarPadding } from '@sandbox-scale/scale-core';
import { baseOf, guestPath, joinGuest, parentOf } from './guest-path';
import type { AgentSignals } from './agent-signals';
import type { AgentSession } from './reach';

/** Zeros a shrunk file is padded with, a slice at a time (never one buffer of the size it had). */
const ZEROS = Buffer.alloc(64 * 1024);

/** Exactly `size` bytes of a file read: a file that grew is cut, one that shrank is padded with zeros (as tar does). */
async function* sized(data: AsyncIterable<Buffer>, size: number): AsyncGenerator<Buffer> {
  let left = size;
  for await (const chunk of data) {
    if (left === 0) continue;
    const part = chunk.length > left ? chunk.subarray(0, left) : chunk;
    left -= part.length;
    yield part;
  }
  for (; left > 0; left -= Math.min(left, ZEROS.length)) yield ZEROS.subarray(0, Math.min(left, ZEROS.length));
}

/**
 * A file or a directory of the guest as a tar stream, named relative to its parent (as `tar -C
 * parent -cf - base`; the root's contents are named from the root). Directories are walked depth
 * first without recursion; symlinks and other special files are left out (the agent cannot read
 * a link's target), so a link can never lead the walk outside what was asked for.
 */
export async function* tarFromGuest(conn: AgentSession, path: string, signals: AgentSignals): AsyncGenerator<Buffer> {
  const top = await conn.stat(path, signals.call());
  const base = baseOf(path);
  const pending: { guest: string; name: string; kind: 'file' | 'dir' }[] = [];
  if (top.kind === 'file' || top.kind === 'dir') pending.push({ guest: path, name: base, kind: top.kind });
  else throw new BadRequestError(`${path} is neither a file nor a directory`);
  for (let item = pending.pop(); item !== undefined; item = pending.pop()) {
    const info = item.guest === path ? top : await conn.stat(item.guest, signals.call());
    const mtimeSecs = info.mtimeEpochSecs;
    if (item.kind === 'file') {
      yield encodeTarHeader({ path: item.name, type: 'file', size: info.size, mode: info.mode, mtimeSecs });
      yield* sized(conn.readFile(item.guest, signals.transfer), info.size);
      yield tarPadding(info.size);
      continue;
    }
    if (item.name !== '') yield encodeTarHeader({ path: item.name, type: 'dir', size: 0, mode: info.mode, mtimeSecs });
    const entries = (await conn.list(item.guest, signals.call())).filter((e) => e.kind === 'file' || e.kind === 'dir');
    // pushed in reverse so the stack pops them in name order
    entries.sort((a, b) => (a.name < b.name ? 1 : a.name > b.name ? -1 : 0));
    for (const e of entries)
      pending.push({
        guest: joinGuest(item.guest, e.name),
        name: item.name === '' ? e.name : `${item.name}/${e.name}`,
        kind: e.kind === 'dir' ? 'dir' : 'file',
      });
  }
  yield TAR_END;
}

/** What an extraction wrote. */
export interface ExtractResult {
  files: number;
  dirs: number;
  /** Links, devices and the like, which the agent cannot make. */
  skipped: number;
}

/**
 * Extracts a tar stream under the guest directory `dir` (created). readTar refuses an absolute
 * or `..` entry (an ArchiveError, a 400), and every name is then checked as a request path is
 * (no control characters, at most MAX_GUEST_PATH), so nothing lands outside `dir`; a refused
 * name stops the extraction, leaving the entries before it written. Each file is written
 * atomically, its mode kept.
 */
export async function extractToGuest(
  conn: AgentSession,
  dir: string,
  source: AsyncIterable<Buffer>,
  signals: AgentSignals,
): Promise<ExtractResult> {
  await conn.mkdir(dir, { parents: true, ...signals.call() });
  const made = new Set<string>([dir]);
  const ensureDir = async (d: string): Promise<void> => {
    if (made.has(d)) return;
    await conn.mkdir(d, { parents: true, ...signals.call() });
    made.add(d);
  };
  const result: ExtractResult = { files: 0, dirs: 0, skipped: 0 };
  for await (const { entry, body } of readTar(source)) {
    const relative = guestPath(`/${entry.path}`, `tar entry ${JSON.stringify(entry.path)}`);
    const target = relative === '/' ? dir : joinGuest(dir, relative.slice(1));
    if (entry.type === 'dir') {
      await ensureDir(target);
      result.dirs++;
    } else if (entry.type === 'file') {
      if (target === dir) throw new BadRequestError(`tar entry ${JSON.stringify(entry.path)} names the target directory itself`);
      await ensureDir(parentOf(target));
      await conn.writeFile(target, body, { mode: entry.mode & 0o7777 || 0o644, ...signals.transfer });
      result.files++;
    } else {
      result.skipped++;
    }
  }
  return result;
}
