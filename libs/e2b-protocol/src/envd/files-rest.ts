import type { IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { gunzipSync } from 'node:zlib';
import { boundaryOf, isMultipartError, parseMultipart } from '../multipart';
import { isGuestError, type EnvdGuest, type GuestErrorCode } from './guest';
import { userOf, UnknownUserError } from './user';

/** The REST status each guest failure answers on `/files`, as the SDKs map them back. */
const STATUS_OF: Record<GuestErrorCode, number> = {
  not_found: 404,
  already_exists: 409,
  invalid_argument: 400,
  permission_denied: 403,
  resource_exhausted: 507,
  failed_precondition: 400,
};

export interface FilesRestOptions {
  /** The largest upload, read whole before it is written (gzip: the size once inflated). */
  readonly maxUploadBytes: number;
  /** Reads a body up to `limit` bytes; undefined past it. */
  readonly readBody: (req: IncomingMessage, limit: number) => Promise<Buffer | undefined>;
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

const fail = (res: ServerResponse, status: number, message: string): void => sendJson(res, status, { code: status, message });

/** What `POST /files` answers for each file written: `[{name,type,path}]` (an empty array is an SDK error). */
const written = (path: string): { name: string; type: 'file'; path: string } => ({
  name: path.slice(path.lastIndexOf('/') + 1),
  type: 'file',
  path,
});

async function uploads(req: IncomingMessage, url: URL, o: FilesRestOptions): Promise<{ path: string; data: Buffer }[] | string> {
  const path = url.searchParams.get('path') ?? '';
  const type = (req.headers['content-type'] ?? '').toLowerCase();
  const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
  if (encoding !== 'identity' && encoding !== 'gzip') return `content-encoding ${encoding} is not accepted (identity or gzip)`;
  const raw = await o.readBody(req, o.maxUploadBytes);
  if (raw === undefined) return `the upload is larger than ${o.maxUploadBytes} bytes`;
  let body: Buffer;
  try {
    body = encoding === 'gzip' ? gunzipSync(raw, { maxOutputLength: o.maxUploadBytes }) : raw;
  } catch {
    return `the gzip body is not valid or inflates past ${o.maxUploadBytes} bytes`;
  }
  if (type.startsWith('application/octet-stream')) {
    if (path === '') return 'path is required for an octet-stream upload';
    return [{ path, data: body }];
  }
  const parts = parseMultipart(body, boundaryOf(req.headers['content-type']), { maxParts: 256 });
  // one file to `path` when it is given; else each part's filename is its path
  const files = parts.map((p) => ({ path: parts.length === 1 && path !== '' ? path : p.filename, data: p.data }));
  if (files.length === 0 || files.some((f) => f.path === '')) return 'each file needs a path (the path parameter or the part filename)';
  return files;
}

/** envd's REST routes: `GET /health`, and `/files` to read (GET) and write (POST, multipart or octet-stream). */
export async function serveRest(
  guest: EnvdGuest | undefined,
  req: IncomingMessage,
  res: ServerResponse,
  o: FilesRestOptions,
): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://envd');
  if (url.pathname === '/health' && req.method === 'GET') {
    res.writeHead(204);
    res.end();
    return;
  }
  if (url.pathname !== '/files') return fail(res, 404, `${req.method ?? ''} ${url.pathname} is not served`);
  if (guest === undefined) return fail(res, 502, 'no sandbox behind this connection');
  guest.touch();
  try {
    userOf(req.headers.authorization, url.searchParams.get('username'));
    if (req.method === 'GET') {
      const path = url.searchParams.get('path') ?? '';
      if (path === '') return fail(res, 400, 'path is required');
      const { stream, size } = await guest.readFile(path);
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': size });
      await pipeline(stream, res).catch(() => res.destroy());
      return;
    }
    if (req.method !== 'POST') return fail(res, 405, `${req.method ?? ''} /files is not served`);
    const files = await uploads(req, url, o);
    if (typeof files === 'string') return fail(res, files.includes('larger') || files.includes('inflates') ? 413 : 400, files);
    for (const f of files) await guest.writeFile(f.path, f.data);
    sendJson(
      res,
      200,
      files.map((f) => written(f.path)),
    );
  } catch (err) {
    if (isGuestError(err)) return fail(res, STATUS_OF[err.code], err.message);
    if (isMultipartError(err) || err instanceof UnknownUserError) return fail(res, 400, err.message);
    throw err;
  }
}
