import type { IncomingMessage, ServerResponse } from 'node:http';
import { readBounded, sendJson, type MemoryBudget } from '@sandbox-scale/kube-runtime';
import { BadRequestError, isJsonSyntaxError, parseUntrustedJson, StatusError } from '@sandbox-scale/scale-core';
import type { RequestInfo } from '../http/request-info';
import { EXEC_BODY_MAX_BYTES, type ExecStorage } from './exec-storage';
import { drained, sendExecResult } from './paced-writes';
import { TAR_MEDIA_TYPE, type FilesReply, type FilesStorage } from './files-storage';
import { fileMode, flag, guestPath } from './guest-path';
import type { PortForwardStorage } from './portforward';
import { DATA_PLANE_SUBRESOURCES, dataPlaneVerb, type DataPlaneSubresource } from './subresources';

/** The storages of the data plane, one per subresource. */
export interface DataPlane {
  /** Bytes that replies in flight hold, per server and per namespace (429 past them). */
  readonly memory: MemoryBudget;
  readonly exec: ExecStorage;
  readonly files: FilesStorage;
  readonly portForward: PortForwardStorage;
}

type ResourceInfo = Extract<RequestInfo, { isResource: true }>;

export interface DataPlaneRequest {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly url: URL;
  readonly info: ResourceInfo;
  readonly user: string;
}

/** Fires when the caller hangs up before its answer is complete, so the node's work is dropped too. */
function hangUpSignal(req: IncomingMessage, res: ServerResponse): AbortSignal {
  const ac = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) ac.abort(new Error('the caller hung up'));
  });
  req.once('aborted', () => ac.abort(new Error('the caller hung up')));
  return ac.signal;
}

const mediaType = (header: string | undefined): string => (header ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
const accepts = (header: string | undefined, type: string): boolean => (header ?? '').split(',').some((part) => mediaType(part) === type);

function contentLengthOf(req: IncomingMessage): number | undefined {
  const raw = req.headers['content-length'];
  return raw === undefined || !/^[0-9]+$/.test(raw) ? undefined : Number(raw);
}

/**
 * A JSON request body of at most `maxBytes`, read with the server's hardened parser (a key that
 * names a prototype is a 422): 415 for another media type, 413 past the size, 400 for bad JSON.
 */
export async function readJsonBody(req: IncomingMessage, maxBytes: number, what: string): Promise<unknown> {
  const type = mediaType(req.headers['content-type']);
  if (type !== '' && type !== 'application/json') {
    await drainRequest(req);
    throw new StatusError('UnsupportedMediaType', `the body of ${what} must be application/json, not ${type}`);
  }
  // an oversized body is still read (and dropped, up to a bound), so the answer is not a reset
  const body = await readBounded(req, maxBytes);
  if (body === undefined) throw new StatusError('RequestEntityTooLarge', `the body of ${what} is over ${maxBytes} bytes`);
  const text = body.toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    return parseUntrustedJson(text);
  } catch (err) {
    if (isJsonSyntaxError(err)) throw new BadRequestError(`invalid JSON body: ${err.message}`, { cause: err });
    throw err;
  }
}

/** How much of a refused body is read and dropped before the connection is given up instead. */
const DRAIN_BYTES = 64 * 1024 * 1024;

/**
 * Reads what is left of a request body and drops it. A body left unread while the answer goes
 * out would reach kube-apiserver's proxy as a reset connection, which it answers with its own
 * 500 or 503 instead of this server's Status; past DRAIN_BYTES the connection is closed.
 */
export async function drainRequest(req: IncomingMessage): Promise<void> {
  if (req.readableEnded || req.destroyed) return;
  let seen = 0;
  try {
    for await (const chunk of req.iterator({ destroyOnReturn: false })) {
      seen += (chunk as Buffer).length;
      if (seen > DRAIN_BYTES) {
        req.socket.destroy();
        return;
      }
    }
  } catch {
    // the caller is gone: nothing left to answer
  }
}

/**
 * Writes a FilesReply. Bytes go out at the pace the caller reads them (the next chunk is pulled
 * only once the last is taken). The status line waits for the first chunk, so a read that fails
 * at once is still answered with its Status; one that fails later cuts the response off, which
 * the caller sees as a broken transfer, never as a short file.
 */
async function sendFilesReply(res: ServerResponse, reply: FilesReply, code = 200): Promise<void> {
  if (reply.kind === 'json') return sendJson(res, code, reply.body);
  const it = reply.stream[Symbol.asyncIterator]();
  try {
    let next = await it.next();
    res.writeHead(code, { 'Content-Type': reply.contentType, 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-store' });
    for (; !next.done; next = await it.next()) if (!res.write(next.value)) await drained(res);
    res.end();
  } catch (err) {
    if (res.headersSent) res.destroy();
    await it.return?.();
    throw err;
  }
}

async function serveFiles(dp: DataPlane, r: DataPlaneRequest, signal: AbortSignal): Promise<void> {
  const { req, res, url, info } = r;
  const q = url.searchParams;
  const path = guestPath(q.get('path'));
  const where = { namespace: info.namespace, name: info.pathName, path };
  const caller = { user: r.user, signal };
  switch (req.method) {
    case 'GET':
      return dp.files.read({ ...where, stat: flag(q, 'stat'), tar: accepts(req.headers.accept, TAR_MEDIA_TYPE) }, caller, (reply) =>
        sendFilesReply(res, reply),
      );
    case 'PUT': {
      const mode = fileMode(q.get('mode'));
      const length = contentLengthOf(req);
      // the storage may stop reading part way (past the bound, a refused tar entry): the stream
      // outlives that, and what is left of the body is read and dropped before the answer (serve)
      const body = req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>;
      const written = await dp.files.write(
        {
          ...where,
          tar: mediaType(req.headers['content-type']) === TAR_MEDIA_TYPE,
          ...(mode !== undefined ? { mode } : {}),
          ...(length !== undefined ? { contentLength: length } : {}),
          body,
        },
        caller,
      );
      return sendJson(res, 201, written);
    }
    default:
      return sendJson(res, 200, await dp.files.remove({ ...where, recursive: flag(q, 'recursive') }, caller));
  }
}

/**
 * Serves exec and files (portforward arrives as an upgrade, see upgrade-handler.ts): the request
 * is translated to its storage's call; the storages hold the logic. `info.subresource` is one of
 * DATA_PLANE_SUBRESOURCES and the method one it serves (else 405 before anything is read).
 */
export async function handleDataPlane(dp: DataPlane, r: DataPlaneRequest): Promise<void> {
  try {
    await serve(dp, r);
  } catch (err) {
    await drainRequest(r.req);
    throw err;
  }
}

async function serve(dp: DataPlane, r: DataPlaneRequest): Promise<void> {
  const { req, res, info } = r;
  const sub = info.subresource as DataPlaneSubresource;
  const method = req.method ?? 'GET';
  if (info.namespace === '' || info.pathName === '')
    throw new StatusError('NotFound', `the server could not find the requested resource (sandboxes/${sub} needs a namespace and a name)`);
  if (dataPlaneVerb(sub, method) === undefined)
    throw new StatusError(
      'MethodNotAllowed',
      `${method} is not supported on sandboxes/${sub} (served: ${Object.keys(DATA_PLANE_SUBRESOURCES[sub].verbs).join(', ')})`,
    );
  if (sub === 'portforward')
    throw new BadRequestError(
      `sandboxes/${sub} is a connection upgrade: send Connection: Upgrade and Upgrade: tcp (sandbox ${info.namespace}/${info.pathName})`,
    );
  const signal = hangUpSignal(req, res);
  if (sub === 'files') return serveFiles(dp, r, signal);
  const body = await readJsonBody(req, EXEC_BODY_MAX_BYTES, `exec in sandbox ${info.namespace}/${info.pathName}`);
  // what the reply holds is given back once the answer is out, or the caller went away
  const memory = dp.memory.lease(info.namespace);
  res.once('close', memory.release);
  try {
    const result = await dp.exec.exec(info.namespace, info.pathName, body, { user: r.user, signal, memory });
    await sendExecResult(res, result);
  } catch (err) {
    memory.release();
    if (res.headersSent) {
      // the caller went away while the answer was being written: nothing left to answer
      res.destroy();
      return;
    }
    throw err;
  }
}
