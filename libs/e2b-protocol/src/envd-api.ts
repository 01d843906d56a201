import type { z } from 'zod';
import { endStreamEnvelope, EnvelopeReader, FLAG_END_STREAM, messageEnvelope } from './connect-envelope';
import { ConnectError, connectHttpStatus, isConnectError } from './connect-errors';
import { entryInfo, ListDirRequestSchema, MoveRequestSchema, PathRequestSchema, writtenEntry, type FileFacts } from './envd-filesystem';
import {
  dataEvent,
  endEvent,
  exitStatus,
  SendSignalRequestSchema,
  startEvent,
  StartRequestSchema,
  type ProcessEvent,
} from './envd-process';
import { boundaryOf, isMultipartError, parseMultipart } from './multipart';

/**
 * envd's RPCs and REST routes, translated: a request in, an answer (or a stream of envelopes)
 * out, each operation done by a backend on the sandbox the request names. Unary RPCs answer
 * `application/json`, or a Connect error with its string code; Start answers
 * `application/connect+json`, a start event first, then output, the end event, and the
 * end-stream envelope that carries any error (the JS SDK ignores a failed stream's body).
 */

/** What the backend runs: a command to completion, its output whole. */
export interface ExecRun {
  cmd: string;
  args: string[];
  envs: Record<string, string>;
  cwd: string | undefined;
  /** The caller's Connect-Timeout-Ms; undefined: none. */
  timeoutMs: number | undefined;
  signal: AbortSignal;
}

export interface EnvdBackend {
  exec(r: ExecRun): Promise<{ exitCode: number; stdout: Buffer; stderr: Buffer }>;
  stat(path: string): Promise<FileFacts>;
  listDir(path: string, depth: number): Promise<FileFacts[]>;
  /** false: it existed already. */
  makeDir(path: string): Promise<boolean>;
  remove(path: string): Promise<void>;
  move(source: string, destination: string): Promise<FileFacts>;
  readFile(path: string): Promise<Buffer>;
  writeFile(path: string, data: Buffer): Promise<void>;
}

export interface EnvdRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  contentType: string | undefined;
  /** Connect-Timeout-Ms, when sent. */
  timeoutMs: number | undefined;
  body: Buffer;
}

export type EnvdReply =
  | { status: number; contentType: string; body: Buffer }
  | { status: 200; contentType: 'application/connect+json'; stream: AsyncIterable<Buffer> };

/** The commands one sandbox runs through this server: envd's pids, so SendSignal finds them. */
export class ProcessTable {
  #next = 1000;
  readonly #running = new Map<number, AbortController>();

  start(): { pid: number; abort: AbortController; done: () => void } {
    const pid = this.#next++;
    const abort = new AbortController();
    this.#running.set(pid, abort);
    return { pid, abort, done: () => this.#running.delete(pid) };
  }

  /** false: no such process (any more). */
  kill(pid: number): boolean {
    const a = this.#running.get(pid);
    if (a === undefined) return false;
    a.abort();
    this.#running.delete(pid);
    return true;
  }

  get size(): number {
    return this.#running.size;
  }
}

/** The largest unary request or stream message read. */
export const MAX_RPC_MESSAGE_BYTES = 1024 * 1024;

const json = (status: number, value: unknown): EnvdReply => ({
  status,
  contentType: 'application/json',
  body: Buffer.from(JSON.stringify(value)),
});
const connectError = (err: ConnectError): EnvdReply => json(connectHttpStatus(err.code), err.toJSON());

function parseMessage<T extends z.ZodType>(schema: T, bytes: Buffer): z.infer<T> {
  let raw: unknown;
  try {
    raw = bytes.length === 0 ? {} : JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new ConnectError('invalid_argument', 'the request is not JSON');
  }
  const r = schema.safeParse(raw);
  if (!r.success) {
    const issue = r.error.issues[0];
    throw new ConnectError('invalid_argument', issue ? `${issue.path.join('.') || 'request'}: ${issue.message}` : 'malformed request');
  }
  return r.data;
}

/** A stream's one request message, from its envelope. */
function streamRequest(body: Buffer): Buffer {
  const reader = new EnvelopeReader(MAX_RPC_MESSAGE_BYTES);
  const [first] = reader.push(body).filter((e) => (e.flags & FLAG_END_STREAM) === 0);
  if (first === undefined) throw new ConnectError('invalid_argument', 'the stream holds no request message');
  return first.data;
}

async function* runStream(
  b: EnvdBackend,
  table: ProcessTable,
  start: z.infer<typeof StartRequestSchema>,
  timeoutMs: number | undefined,
): AsyncGenerator<Buffer> {
  const proc = table.start();
  const event = (e: ProcessEvent): Buffer => messageEnvelope(e);
  // the command runs from here, whether or not the caller reads on (a background command's
  // caller reads only the start event)
  const running = b.exec({
    cmd: start.process.cmd,
    args: start.process.args,
    envs: start.process.envs,
    cwd: start.process.cwd,
    timeoutMs,
    signal: proc.abort.signal,
  });
  running.catch(() => undefined);
  try {
    // the SDKs wait for this before anything else
    yield event(startEvent(proc.pid));
    let result: { exitCode: number; stdout: Buffer; stderr: Buffer };
    try {
      result = await running;
    } catch (err) {
      if (proc.abort.signal.aborted) {
        yield event(endEvent({ exitCode: -1, exited: false, status: exitStatus(-1, 'killed') }));
        yield endStreamEnvelope();
        return;
      }
      yield endStreamEnvelope(isConnectError(err) ? err.toJSON() : { code: 'internal', message: 'the command could not be run' });
      return;
    }
    if (result.stdout.length > 0) yield event(dataEvent('stdout', result.stdout));
    if (result.stderr.length > 0) yield event(dataEvent('stderr', result.stderr));
    yield event(endEvent({ exitCode: result.exitCode, exited: true, status: exitStatus(result.exitCode) }));
    yield endStreamEnvelope();
  } finally {
    proc.done();
  }
}

async function unary(b: EnvdBackend, table: ProcessTable, method: string, body: Buffer): Promise<unknown> {
  switch (method) {
    case 'filesystem.Filesystem/Stat':
      return { entry: entryInfo(await b.stat(parseMessage(PathRequestSchema, body).path)) };
    case 'filesystem.Filesystem/ListDir': {
      const r = parseMessage(ListDirRequestSchema, body);
      return { entries: (await b.listDir(r.path, r.depth)).map(entryInfo) };
    }
    case 'filesystem.Filesystem/MakeDir': {
      const { path } = parseMessage(PathRequestSchema, body);
      if (!(await b.makeDir(path))) throw new ConnectError('already_exists', `${path} exists already`);
      return { entry: entryInfo(await b.stat(path)) };
    }
    case 'filesystem.Filesystem/Remove':
      await b.remove(parseMessage(PathRequestSchema, body).path);
      return {};
    case 'filesystem.Filesystem/Move': {
      const r = parseMessage(MoveRequestSchema, body);
      return { entry: entryInfo(await b.move(r.source, r.destination)) };
    }
    case 'process.Process/SendSignal': {
      const r = parseMessage(SendSignalRequestSchema, body);
      if (!table.kill(r.process.pid)) throw new ConnectError('not_found', `no process ${r.process.pid}`);
      return {};
    }
    case 'process.Process/List':
      return {};
  }
  throw new ConnectError('unimplemented', `${method} is not served`);
}

const STREAMS = new Set(['process.Process/Start']);

async function files(b: EnvdBackend, r: EnvdRequest): Promise<EnvdReply> {
  const path = r.query.get('path') ?? undefined;
  if (r.method === 'GET') {
    if (!path) return json(400, { code: 400, message: 'path is required' });
    return { status: 200, contentType: 'application/octet-stream', body: await b.readFile(path) };
  }
  if (r.method !== 'POST') return json(405, { code: 405, message: `${r.method} /files is not served` });
  if ((r.contentType ?? '').toLowerCase().startsWith('application/octet-stream')) {
    if (!path) return json(400, { code: 400, message: 'path is required for an octet-stream write' });
    await b.writeFile(path, r.body);
    return json(200, [writtenEntry(path)]);
  }
  let parts;
  try {
    parts = parseMultipart(r.body, boundaryOf(r.contentType), { maxParts: 256 });
  } catch (err) {
    if (isMultipartError(err)) return json(400, { code: 400, message: err.message });
    throw err;
  }
  // one file to `path` when it is given; else each part's filename is its path
  const targets = parts.map((p) => ({ path: parts.length === 1 && path ? path : p.filename, data: p.data }));
  for (const t of targets) await b.writeFile(t.path, t.data);
  return json(
    200,
    targets.map((t) => writtenEntry(t.path)),
  );
}

/** The REST status of a backend's Connect error on a files route. */
const restStatus = (err: ConnectError): number =>
  err.code === 'not_found' ? 404 : err.code === 'invalid_argument' ? 400 : connectHttpStatus(err.code);

export async function serveEnvd(b: EnvdBackend, table: ProcessTable, r: EnvdRequest): Promise<EnvdReply> {
  if (r.path === '/health') return { status: 204, contentType: 'text/plain', body: Buffer.alloc(0) };
  if (r.path === '/files') {
    try {
      return await files(b, r);
    } catch (err) {
      if (isConnectError(err)) return json(restStatus(err), { code: restStatus(err), message: err.message });
      throw err;
    }
  }
  const method = r.path.replace(/^\//, '');
  if (r.method !== 'POST') return connectError(new ConnectError('unimplemented', `${r.method} ${r.path} is not served`));
  if (STREAMS.has(method)) {
    let start: z.infer<typeof StartRequestSchema>;
    try {
      start = parseMessage(StartRequestSchema, streamRequest(r.body));
    } catch (err) {
      if (!isConnectError(err)) throw err;
      return {
        status: 200,
        contentType: 'application/connect+json',
        stream: (async function* () {
          yield endStreamEnvelope(err.toJSON());
        })(),
      };
    }
    return { status: 200, contentType: 'application/connect+json', stream: runStream(b, table, start, r.timeoutMs) };
  }
  try {
    return json(200, await unary(b, table, method, r.body));
  } catch (err) {
    if (isConnectError(err)) return connectError(err);
    throw err;
  }
}
