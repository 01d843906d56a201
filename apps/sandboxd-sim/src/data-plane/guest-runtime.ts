import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { FileHandle } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { pipeline } from 'node:stream/promises';
import { guardRequests, readBounded } from '@sandbox-scale/kube-runtime';
import { EXEC_OUTPUT_LIMIT_BYTES } from '@sandbox-scale/sandboxd-client';
import { isJsonSyntaxError, parseUntrustedJson } from '@sandbox-scale/scale-core';
import { z } from 'zod';
import type { SandboxAccess } from './access';
import type { DataPlane } from './data-plane';
import { collectOutput, isSpawnError, spawnGuest } from './exec-runner';
import { listDir, openRegular, pathInfo, writeAtomic } from './guest-files';
import { isGuestPathError } from './guest-path';
import { isShlexError, shlexSplit } from './shlex';

/** /execute's body, as agent-sandbox's client sends it. */
const ExecuteBodySchema = z.object({ command: z.string(), timeout_seconds: z.number().min(0).nullish() });
const JSON_LIMIT_BYTES = 1 << 20;
/** An upload is read whole before it is written, so it is bounded. */
export const UPLOAD_LIMIT_BYTES = 64 << 20;
/** A command without `timeout_seconds` is killed after this long. */
const DEFAULT_COMMAND_TIMEOUT_S = 60;

class HttpFail extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
  ) {
    super(detail);
  }
}

type Handler = (access: SandboxAccess, req: IncomingMessage, rest: string) => Promise<Reply>;
type Reply = { status: number; json: unknown } | { status: number; file: FileHandle; size: number };

/**
 * The runtime that agent-sandbox's clients talk to on guest port 8888, over the sandbox's root:
 * `GET /`, `POST /execute`, `POST /upload`, `GET /download/…`, `/list/…` and `/exists/…`. It is
 * a node:http server that never listens: each relayed connection is handed to it, remembered
 * with the sandbox it belongs to. Errors are `{"detail": …}`; a path escaping the root is 403.
 */
export class GuestRuntime {
  readonly #server: Server;
  readonly #owners = new WeakMap<Socket, SandboxAccess>();

  constructor(dp: DataPlane) {
    this.#server = createServer(
      guardRequests((req, res) => this.#handle(req, res), {
        log: dp.logger,
        fail: (res) => send(res, { status: 500, json: { detail: 'internal error' } }),
      }),
    );
  }

  accept(socket: Socket, access: SandboxAccess): void {
    this.#owners.set(socket, access);
    this.#server.emit('connection', socket);
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const access = this.#owners.get(req.socket);
    if (access === undefined) return send(res, { status: 500, json: { detail: 'connection of no sandbox' } });
    access.touch();
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const route = ROUTES.find((r) => r.method === req.method && (r.exact ? path === r.prefix : path.startsWith(r.prefix)));
    if (route === undefined) return send(res, { status: 404, json: { detail: 'Not Found' } });
    try {
      send(res, await route.handle(access, req, path.slice(route.prefix.length)));
    } catch (err) {
      if (!(err instanceof HttpFail)) throw err;
      send(res, { status: err.status, json: { detail: err.detail } });
    }
  }
}

const runtimes = new WeakMap<DataPlane, GuestRuntime>();

export function guestRuntimeOf(dp: DataPlane): GuestRuntime {
  let rt = runtimes.get(dp);
  if (rt === undefined) {
    rt = new GuestRuntime(dp);
    runtimes.set(dp, rt);
  }
  return rt;
}

/** JSON, or a file streamed from its open handle (closed when the stream ends or the caller goes). */
function send(res: ServerResponse, reply: Reply): void {
  if ('file' in reply) {
    res.writeHead(reply.status, { 'content-type': 'application/octet-stream', 'content-length': reply.size });
    pipeline(reply.file.createReadStream(), res).catch(() => res.destroy());
    return;
  }
  const body = Buffer.from(JSON.stringify(reply.json));
  res.writeHead(reply.status, { 'content-type': 'application/json', 'content-length': body.length });
  res.end(body);
}

/** The path after the route's prefix, percent-decoded (clients send `/` as `%2F`). */
function guestPathOf(rest: string): string {
  let path: string;
  try {
    path = decodeURIComponent(rest);
  } catch {
    throw new HttpFail(400, 'malformed percent-encoding in the path');
  }
  return path === '' ? '.' : path;
}

/** A file operation's failure as the runtime answers it: 403 escape, 404 missing, 400 otherwise. */
async function files<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (isGuestPathError(err)) throw new HttpFail(err.problem === 'escape' ? 403 : err.problem === 'not_found' ? 404 : 400, err.message);
    const code = (err as { code?: unknown }).code;
    if (code === 'ENOENT') throw new HttpFail(404, 'not found');
    if (typeof code === 'string' && code.startsWith('E')) throw new HttpFail(400, code);
    throw err;
  }
}

async function jsonBody(req: IncomingMessage): Promise<unknown> {
  const raw = await readBounded(req, JSON_LIMIT_BYTES);
  if (raw === undefined) throw new HttpFail(413, 'request body too large');
  try {
    return parseUntrustedJson(raw.toString('utf8'));
  } catch (err) {
    throw new HttpFail(isJsonSyntaxError(err) ? 400 : 422, (err as Error).message);
  }
}

async function execute(access: SandboxAccess, req: IncomingMessage): Promise<Reply> {
  const body = ExecuteBodySchema.safeParse(await jsonBody(req));
  if (!body.success) throw new HttpFail(422, 'want {"command": string, "timeout_seconds"?: number}');
  let argv: string[];
  try {
    argv = shlexSplit(body.data.command);
  } catch (err) {
    throw new HttpFail(400, isShlexError(err) ? `cannot split the command: ${err.message}` : 'cannot split the command');
  }
  if (argv.length === 0) throw new HttpFail(400, 'empty command');
  const child = await spawnGuest(access.dp.groups, {
    sandboxId: access.sb.id,
    argv,
    cwd: access.root,
    output: 'pipe',
    owner: access.owner,
  }).catch((err: unknown) => {
    if (isSpawnError(err)) return err;
    throw err;
  });
  // a command that cannot start reads as a shell would answer it
  if (isSpawnError(child))
    return {
      status: 200,
      json: { stdout: '', stderr: `${child.message}\n`, exit_code: child.code === 'ENOENT' ? 127 : 126, timed_out: false },
    };
  const release = access.dp.hold(access.sb.id);
  try {
    const timeoutS = body.data.timeout_seconds ?? DEFAULT_COMMAND_TIMEOUT_S;
    const o = await collectOutput(child, { timeoutMs: timeoutS * 1000, capBytes: EXEC_OUTPUT_LIMIT_BYTES, memory: access.dp.memory });
    if (o.end === 'cap') throw new HttpFail(413, `command output exceeds ${EXEC_OUTPUT_LIMIT_BYTES} bytes`);
    if (o.end === 'memory') throw new HttpFail(503, 'node exec memory exhausted');
    const timedOut = o.end === 'timeout';
    return {
      status: 200,
      json: {
        stdout: o.stdout.toString('utf8'),
        stderr: o.stderr.toString('utf8'),
        exit_code: timedOut ? -1 : o.exitCode,
        timed_out: timedOut,
      },
    };
  } finally {
    release();
  }
}

async function upload(access: SandboxAccess, req: IncomingMessage): Promise<Reply> {
  const type = req.headers['content-type'] ?? '';
  if (!type.toLowerCase().startsWith('multipart/form-data')) throw new HttpFail(400, 'want multipart/form-data with a field "file"');
  const raw = await readBounded(req, UPLOAD_LIMIT_BYTES);
  if (raw === undefined) throw new HttpFail(413, `upload exceeds ${UPLOAD_LIMIT_BYTES} bytes`);
  const form = await new Response(raw, { headers: { 'content-type': type } }).formData().catch(() => {
    throw new HttpFail(400, 'malformed multipart body');
  });
  const file = form.get('file');
  if (file === null || typeof file === 'string' || file.name === '')
    throw new HttpFail(400, 'want a field "file" whose filename is the path');
  const data = Buffer.from(await file.arrayBuffer());
  await files(() => writeAtomic(access.root, file.name, data, access.owner));
  return { status: 200, json: { message: `File '${file.name}' uploaded successfully` } };
}

const ROUTES: ReadonlyArray<{ method: string; prefix: string; exact?: boolean; handle: Handler }> = [
  {
    method: 'GET',
    prefix: '/',
    exact: true,
    handle: async () => ({ status: 200, json: { status: 'ok', message: 'sandbox runtime is running' } }),
  },
  { method: 'POST', prefix: '/execute', exact: true, handle: execute },
  { method: 'POST', prefix: '/upload', exact: true, handle: upload },
  {
    method: 'GET',
    prefix: '/download/',
    handle: async (a, _req, rest) => ({ status: 200, ...(await files(() => openRegular(a.root, guestPathOf(rest)))) }),
  },
  {
    method: 'GET',
    prefix: '/list/',
    handle: async (a, _req, rest) => ({ status: 200, json: await files(() => listDir(a.root, guestPathOf(rest))) }),
  },
  {
    method: 'GET',
    prefix: '/exists/',
    handle: async (a, _req, rest) => {
      const path = guestPathOf(rest);
      return { status: 200, json: { path, exists: (await files(() => pathInfo(a.root, path))) !== undefined } };
    },
  },
];
