import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { SANDBOX_GROUP } from '@sandbox-scale/scale-core';
import { z } from 'zod';
import type { CallOptions } from './deadline';
import { InvalidArgumentError, SdkError, WrongFileKindError, type RequestTarget } from './errors';
import { sandboxesPath } from './kube-api';
import { mediaTypeOf, openStream, readAll, type StreamRequest } from './kube-stream';
import { callOnSandbox, type SandboxScope } from './sandbox-retry';

const KINDS = ['file', 'dir', 'symlink', 'other'] as const;

/** A mode as a number, whether the server writes it as one or as an octal string ("0755"). */
const ModeSchema = z.union([
  z.number().int(),
  z
    .string()
    .regex(/^0?[0-7]{1,6}$/)
    .transform((s) => parseInt(s, 8)),
]);

export const FileEntrySchema = z.looseObject({ name: z.string(), kind: z.enum(KINDS), size: z.number().default(0) });
const FileListSchema = z.looseObject({ path: z.string().optional(), items: z.array(FileEntrySchema).default([]) });
export const FileInfoSchema = z.looseObject({
  path: z.string(),
  type: z.enum(KINDS),
  size: z.number().default(0),
  mode: ModeSchema.default(0),
  mtime: z.string().optional(),
});

export type FileEntry = Pick<z.infer<typeof FileEntrySchema>, 'name' | 'kind' | 'size'>;
export type FileInfo = Pick<z.infer<typeof FileInfoSchema>, 'path' | 'type' | 'size' | 'mode' | 'mtime'>;

export interface ReadOptions extends CallOptions {
  /** A file bigger than this is refused rather than held in memory; default 1 GiB. Use readStream for more. */
  maxBytes?: number;
}

export interface WriteOptions extends CallOptions {
  /** The file's permission bits (e.g. 0o755); default: kept for an existing file, else the node's default. */
  mode?: number;
}

const DEFAULT_MAX_READ_BYTES = 1024 * 1024 * 1024;
/** SandboxFileInfo and Status answers are small documents. */
const MAX_DOCUMENT_BYTES = 1024 * 1024;

const TAR = 'application/x-tar';
const OCTET = 'application/octet-stream';
const JSON_TYPE = 'application/json';

const READ = (path: string): Omit<StreamRequest, 'path' | 'signal'> => ({
  method: 'GET',
  query: { path },
  // a directory answers with its listing as JSON, which is how read tells it from a file
  headers: { Accept: `${OCTET}, ${JSON_TYPE};q=0.5` },
});

function checkPath(path: string): void {
  if (typeof path !== 'string' || path === '') throw new InvalidArgumentError('a sandbox path must be a non-empty string');
  if (path.includes('\0')) throw new InvalidArgumentError('a sandbox path must not contain a NUL byte');
}

function octal(mode: number): string {
  if (!Number.isInteger(mode) || mode < 0 || mode > 0o7777) throw new InvalidArgumentError(`a file mode must be in 0-0o7777, got ${mode}`);
  return mode.toString(8).padStart(4, '0');
}

async function documentOf(res: IncomingMessage, what: string): Promise<unknown> {
  const text = (await readAll(res, MAX_DOCUMENT_BYTES, what)).toString('utf8');
  try {
    return text === '' ? undefined : (JSON.parse(text) as unknown);
  } catch (err) {
    throw new SdkError(`${what}: the answer is not JSON`, { cause: err });
  }
}

/**
 * A sandbox's files through the `files` subresource (GET, PUT, DELETE sandboxes/{name}/files
 * ?path=…): reads and writes stream, directories move as tar archives. Paths are guest paths,
 * absolute (`/work/x.py`) or relative to the sandbox's root.
 */
export class SandboxFiles {
  constructor(private readonly s: SandboxScope) {}

  #target(verb: string): RequestTarget {
    return { verb, resource: 'sandboxes/files', group: SANDBOX_GROUP, namespace: this.s.namespace, name: this.s.name };
  }

  /**
   * One request on the files subresource, its answer handed to `consume` within the same
   * attempt: a read cut short or refused while the sandbox is still being listed is tried again
   * whole, and the deadline covers reading the answer too.
   */
  #call<T>(
    req: Omit<StreamRequest, 'path' | 'signal'>,
    what: string,
    o: CallOptions & { verb: string; repeatable?: boolean },
    consume: (res: IncomingMessage) => Promise<T>,
  ): Promise<T> {
    const path = `${sandboxesPath(this.s.namespace, this.s.name)}/files`;
    const policy = { idempotent: o.verb === 'get', repeatable: o.repeatable ?? true, pathScoped: true };
    return callOnSandbox(this.s, what, policy, o, async (signal) =>
      consume(await openStream(this.s.kc, { ...req, path, ...(signal ? { signal } : {}) }, this.#target(o.verb))),
    );
  }

  #wrongKind(path: string, kind: 'dir' | 'file'): WrongFileKindError {
    const is = kind === 'dir' ? 'is a directory' : 'is not a directory';
    return new WrongFileKindError(`${path} in sandbox ${this.s.namespace}/${this.s.name} ${is}`, { path, kind });
  }

  /** A file's bytes, streamed as they arrive. A directory is a WrongFileKindError. */
  async readStream(path: string, o: CallOptions = {}): Promise<Readable> {
    checkPath(path);
    return this.#call(READ(path), 'read', { ...o, verb: 'get' }, async (res) => {
      if (mediaTypeOf(res) !== JSON_TYPE) return res;
      res.destroy();
      throw this.#wrongKind(path, 'dir');
    });
  }

  /** A file's bytes. A directory is a WrongFileKindError; a file over maxBytes an SdkError. */
  async read(path: string, o: ReadOptions = {}): Promise<Buffer> {
    checkPath(path);
    return this.#call(READ(path), 'read', { ...o, verb: 'get' }, async (res) => {
      if (mediaTypeOf(res) !== JSON_TYPE) return readAll(res, o.maxBytes ?? DEFAULT_MAX_READ_BYTES, `read ${path}`);
      res.destroy();
      throw this.#wrongKind(path, 'dir');
    });
  }

  /**
   * Writes `data` to `path` atomically (the node writes a temporary file and renames it),
   * creating parent directories. A stream is sent as it is read, never held whole; it is sent
   * once, so a stream is not retried on a 404 of a sandbox still being listed.
   */
  async write(path: string, data: Buffer | string | Readable, o: WriteOptions = {}): Promise<FileInfo> {
    checkPath(path);
    const body = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    const query = { path, ...(o.mode !== undefined ? { mode: octal(o.mode) } : {}) };
    const req = { method: 'PUT' as const, query, headers: { 'Content-Type': OCTET }, body };
    return this.#call(req, 'write', { ...o, verb: 'create', repeatable: Buffer.isBuffer(body) }, async (res) =>
      FileInfoSchema.parse(await documentOf(res, `write ${path}`)),
    );
  }

  /** The entries of a directory. A file is a WrongFileKindError. */
  async list(path: string, o: CallOptions = {}): Promise<FileEntry[]> {
    checkPath(path);
    const req = { method: 'GET' as const, query: { path }, headers: { Accept: JSON_TYPE } };
    const list = await this.#call(req, 'list', { ...o, verb: 'get' }, async (res) => {
      if (mediaTypeOf(res) === JSON_TYPE) return FileListSchema.parse(await documentOf(res, `list ${path}`));
      res.destroy();
      throw this.#wrongKind(path, 'file');
    });
    return list.items.map(({ name, kind, size }) => ({ name, kind, size }));
  }

  /** What `path` is: its type, size, mode and modification time. */
  async stat(path: string, o: CallOptions = {}): Promise<FileInfo> {
    checkPath(path);
    const req = { method: 'GET' as const, query: { path, stat: 'true' } };
    const info = await this.#call(req, 'stat', { ...o, verb: 'get' }, async (res) =>
      FileInfoSchema.parse(await documentOf(res, `stat ${path}`)),
    );
    const { type, size, mode, mtime } = info;
    return { path, type, size, mode, ...(mtime !== undefined ? { mtime } : {}) };
  }

  /** Deletes a file, or a directory (with everything in it when `recursive`). */
  async remove(path: string, o: CallOptions & { recursive?: boolean } = {}): Promise<void> {
    checkPath(path);
    const query = { path, ...(o.recursive ? { recursive: 'true' } : {}) };
    await this.#call({ method: 'DELETE', query }, 'remove', { ...o, verb: 'delete' }, (res) => documentOf(res, `remove ${path}`));
  }

  /** `path` (a file or a directory) as a tar stream, its entries named from its parent (`dir/`, `dir/a.txt`). */
  async download(path: string, o: CallOptions = {}): Promise<Readable> {
    checkPath(path);
    return this.#call({ method: 'GET', query: { path }, headers: { Accept: TAR } }, 'download', { ...o, verb: 'get' }, async (res) => {
      if (mediaTypeOf(res) === TAR) return res;
      res.destroy();
      throw new SdkError(`download ${path}: the server answered ${mediaTypeOf(res) || 'no content type'}, not a tar archive`);
    });
  }

  /** Unpacks a tar stream under the directory `dir` (created), as `tar -C dir -xf -` would. */
  async upload(dir: string, tar: Readable, o: CallOptions = {}): Promise<FileInfo> {
    checkPath(dir);
    const req = { method: 'PUT' as const, query: { path: dir }, headers: { 'Content-Type': TAR }, body: tar };
    return this.#call(req, 'upload', { ...o, verb: 'create', repeatable: false }, async (res) =>
      FileInfoSchema.parse(await documentOf(res, `upload ${dir}`)),
    );
  }
}
