import type { Stats } from 'node:fs';
import { lchown, lstat, mkdir, opendir, rename, rm, rmdir, stat, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import {
  AGENT_CHUNK_BYTES,
  AGENT_LIST_BATCH,
  AgentUploadFrameSchema,
  type AgentEntry,
  type AgentEntryKind,
  type AgentRequest,
} from '@sandbox-scale/sandboxd-client';
import { parseUntrustedJson } from '@sandbox-scale/scale-core';
import { AgentFail, agentFailOf, type AgentIo } from './agent-io';
import { commitTemp, lstatOrUndefined, openRegular, openTemp, PERMISSION_BITS, writeTarget, type WriteTarget } from './guest-files';
import { ensureDir, resolveFollow, resolveName } from './guest-path';

type Op<K extends AgentRequest['op']> = Extract<AgentRequest, { op: K }>;

export function kindOf(st: Stats): AgentEntryKind {
  if (st.isFile()) return 'file';
  if (st.isDirectory()) return 'dir';
  if (st.isSymbolicLink()) return 'symlink';
  return 'other';
}

/** Runs a file operation, answering its failure as the agent does. */
async function mapped<T>(path: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw agentFailOf(err, path);
  }
}

const INVALID_UPLOAD = 'invalid';

/** The next upload frame: a chunk, null at `data_end`, or INVALID_UPLOAD for a frame of neither kind. */
async function nextChunk(io: AgentIo): Promise<Buffer | null | typeof INVALID_UPLOAD> {
  const line = await io.reader.next();
  if (line === undefined) throw new Error('connection closed during fs_write');
  let value: unknown;
  try {
    value = parseUntrustedJson(line.toString('utf8'), 'the frame');
  } catch {
    return INVALID_UPLOAD;
  }
  const parsed = AgentUploadFrameSchema.safeParse(value);
  if (!parsed.success) return INVALID_UPLOAD;
  return 'data' in parsed.data ? Buffer.from(parsed.data.data, 'base64') : null;
}

/**
 * fs_write: data frames, then data_end, then `done`. The bytes go to a temp file beside the
 * target, renamed over it at the end, so a reader never sees half a file. Parent directories are
 * created. A refusal is answered after data_end, so the stream stays in step.
 */
export async function fsWrite(io: AgentIo, req: Op<'fs_write'>): Promise<void> {
  let failure: unknown;
  let target: WriteTarget | undefined;
  let file: FileHandle | undefined;
  try {
    target = await writeTarget(io.access.root, req.path, io.access.owner, req.mode);
    file = await openTemp(target);
  } catch (err) {
    failure = err;
  }
  try {
    for (let chunk = await nextChunk(io); chunk !== null; chunk = await nextChunk(io)) {
      if (chunk === INVALID_UPLOAD) failure ??= new AgentFail('bad_request', 'fs_write expects data frames, then data_end');
      else if (failure === undefined && file !== undefined) await file.write(chunk).catch((err: unknown) => void (failure = err));
    }
  } catch (err) {
    failure ??= err;
  }
  if (file !== undefined && target !== undefined) await commitTemp(file, target, failure === undefined);
  if (failure !== undefined) throw agentFailOf(failure, req.path);
  await io.send({ type: 'done' });
}

/** fs_read: the file's bytes in data frames of 256 KiB, then `done`. Only regular files are read. */
export async function fsRead(io: AgentIo, req: Op<'fs_read'>): Promise<void> {
  const { file } = await mapped(req.path, () => openRegular(io.access.root, req.path));
  try {
    const buf = Buffer.alloc(AGENT_CHUNK_BYTES);
    for (;;) {
      const { bytesRead } = await mapped(req.path, () => file.read(buf, 0, buf.length, null));
      if (bytesRead === 0) break;
      await io.send({ type: 'data', data: buf.subarray(0, bytesRead).toString('base64') });
    }
  } finally {
    await file.close();
  }
  await io.send({ type: 'done' });
}

/** fs_list: `entries` frames of up to 4,096 entries, then `done`. */
export async function fsList(io: AgentIo, req: Op<'fs_list'>): Promise<void> {
  const host = await mapped(req.path, async () => {
    const dir = await resolveFollow(io.access.root, req.path);
    if (!(await stat(dir)).isDirectory()) throw new AgentFail('bad_request', `not a directory: ${JSON.stringify(req.path)}`);
    return dir;
  });
  const dir = await mapped(req.path, () => opendir(host, { bufferSize: 256 }));
  let batch: AgentEntry[] = [];
  try {
    for await (const d of dir) {
      const st = await lstatOrUndefined(join(host, d.name));
      if (st === undefined) continue; // removed while listing
      batch.push({ name: d.name, kind: kindOf(st), size: st.size });
      if (batch.length === AGENT_LIST_BATCH) {
        await io.send({ type: 'entries', entries: batch });
        batch = [];
      }
    }
  } catch (err) {
    throw agentFailOf(err, req.path);
  }
  if (batch.length > 0) await io.send({ type: 'entries', entries: batch });
  await io.send({ type: 'done' });
}

/** fs_stat: `stat{info}` of the path itself (a symbolic link is reported as one), then `done`. */
export async function fsStat(io: AgentIo, req: Op<'fs_stat'>): Promise<void> {
  const st = await mapped(req.path, async () => lstat((await resolveName(io.access.root, req.path)).host));
  await io.send({
    type: 'stat',
    info: { kind: kindOf(st), size: st.size, mode: st.mode & PERMISSION_BITS, mtime_epoch_secs: Math.floor(st.mtimeMs / 1000) },
  });
  await io.send({ type: 'done' });
}

export async function fsMkdir(io: AgentIo, req: Op<'fs_mkdir'>): Promise<void> {
  await mapped(req.path, async () => {
    const { root, owner } = io.access;
    if (req.parents) return void (await ensureDir(root, req.path, owner));
    const target = await resolveName(root, req.path);
    if (target.name === '') throw new AgentFail('bad_request', 'the sandbox root exists');
    await mkdir(target.host);
    if (owner !== undefined) await lchown(target.host, owner.uid, owner.gid);
  });
  await io.send({ type: 'done' });
}

export async function fsRm(io: AgentIo, req: Op<'fs_rm'>): Promise<void> {
  await mapped(req.path, async () => {
    const target = await resolveName(io.access.root, req.path);
    if (target.name === '') throw new AgentFail('bad_request', 'cannot remove the sandbox root');
    const st = await lstat(target.host);
    if (!st.isDirectory()) await unlink(target.host);
    else if (req.recursive) await rm(target.host, { recursive: true });
    else await rmdir(target.host);
  });
  await io.send({ type: 'done' });
}

export async function fsRename(io: AgentIo, req: Op<'fs_rename'>): Promise<void> {
  await mapped(`${req.from} -> ${req.to}`, async () => {
    const from = await resolveName(io.access.root, req.from);
    const to = await resolveName(io.access.root, req.to);
    if (from.name === '' || to.name === '') throw new AgentFail('bad_request', 'cannot rename the sandbox root');
    await rename(from.host, to.host);
  });
  await io.send({ type: 'done' });
}
