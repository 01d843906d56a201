import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from '../log/logger';

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void> | void;

/** Writes the answer to a request whose handler failed unexpectedly; headers are not sent yet. */
export type FailureWriter = (res: ServerResponse, err: unknown) => void;

export interface GuardOptions {
  readonly log: Logger;
  /** Default: a plain-text 500 `internal error`. The body never carries the error's own text. */
  readonly fail?: FailureWriter;
}

const plainFailure: FailureWriter = (res) => {
  const body = 'internal error\n';
  res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
};

/**
 * A request listener that no thrown value or rejected promise of `handler` escapes: an
 * exception the handler did not answer itself fails that request only (500, a generic body,
 * the details in the log) and the server keeps serving. A response already under way cannot
 * change its status, so its connection is closed instead.
 */
export function guardRequests(handler: RequestHandler, o: GuardOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const fail = o.fail ?? plainFailure;
  const onError = (req: IncomingMessage, res: ServerResponse, err: unknown): void => {
    o.log.error({ err, method: req.method, path: req.url }, 'request failed unexpectedly');
    if (res.headersSent || res.destroyed) {
      res.destroy();
      return;
    }
    try {
      fail(res, err);
    } catch (writeErr) {
      o.log.error({ err: writeErr }, 'could not answer a failed request');
      res.destroy();
    }
  };
  return (req, res) => {
    try {
      const pending = handler(req, res);
      if (pending !== undefined) pending.catch((err: unknown) => onError(req, res, err));
    } catch (err) {
      onError(req, res, err);
    }
  };
}

/** How long a client may take, and how much it may send, before it is answered 408/431 and closed. */
export interface ServerLimits {
  /** Time to send the request line and headers (slow-loris bound). */
  readonly headersTimeoutMs?: number;
  /** Time to send the whole request, body included; a streamed response (a watch) is not bounded by it. */
  readonly requestTimeoutMs?: number;
  /** Idle time a kept-alive connection is held open between requests. */
  readonly keepAliveTimeoutMs?: number;
  /** Headers past this count are dropped, not parsed. */
  readonly maxHeadersCount?: number;
  /**
   * Connections held open at once; one past it is closed as it arrives, so a single caller
   * opening sockets without end runs the server out of file descriptors and memory never.
   */
  readonly maxConnections?: number;
}

export const DEFAULT_SERVER_LIMITS: Required<ServerLimits> = {
  headersTimeoutMs: 30_000,
  requestTimeoutMs: 60_000,
  keepAliveTimeoutMs: 90_000,
  maxHeadersCount: 200,
  maxConnections: 10_000,
};

/** Applies request/header timeouts, header and connection caps; node then answers 408/431/400 itself and closes. */
/** Every socket of each limited server, from its first byte (a TLS one before its handshake ends). */
const SOCKETS = new WeakMap<Server, Set<Socket>>();

export function limitServer(server: Server, limits: ServerLimits = {}): void {
  const sockets = new Set<Socket>();
  SOCKETS.set(server, sockets);
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  const l = { ...DEFAULT_SERVER_LIMITS, ...limits };
  server.requestTimeout = l.requestTimeoutMs;
  // node measures both from the first byte; a header deadline past the request one would never fire
  server.headersTimeout = Math.min(l.headersTimeoutMs, l.requestTimeoutMs);
  server.keepAliveTimeout = l.keepAliveTimeoutMs;
  server.maxHeadersCount = l.maxHeadersCount;
  server.maxConnections = l.maxConnections;
}

/**
 * Stops listening and ends every connection at once, those still in their TLS handshake
 * included (closeAllConnections reaches only sockets already speaking HTTP, so a half-open
 * handshake would otherwise hold the close until its timeout).
 */
export function closeServer(server: Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
    for (const s of SOCKETS.get(server) ?? []) s.destroy();
  });
}

/**
 * The request target as a URL, or undefined when it cannot be one. Origin-form (`/a/b?c`) keeps
 * its path as sent (`//x` is a path, not a host); absolute-form keeps path and query only.
 */
export function requestUrl(raw: string | undefined, base: string): URL | undefined {
  const target = raw ?? '/';
  try {
    if (target.startsWith('/')) return new URL(`${base}${target}`);
    const abs = new URL(target);
    return new URL(`${base}${abs.pathname}${abs.search}`);
  } catch {
    return undefined;
  }
}

/** decodeURIComponent that answers undefined for malformed percent-encoding instead of throwing. */
export function decodeSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/** How much of a body past its limit is read and dropped before the connection is given up. */
const DRAIN_BYTES = 16 * 1024 * 1024;

/**
 * A request body of at most `limit` bytes, or undefined when it is larger. A larger body is
 * still read to its end and dropped (up to 16 MiB more; past that the connection is closed), so
 * the answer leaves the kept-alive connection ready for the client's next request: a body left
 * half read would hold that request unanswered until the request deadline.
 */
export async function readBounded(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const b = chunk as Buffer;
    size += b.length;
    if (size <= limit) chunks.push(b);
    else if (size > limit + DRAIN_BYTES) {
      req.socket.destroy();
      return undefined;
    }
  }
  return size > limit ? undefined : Buffer.concat(chunks);
}
