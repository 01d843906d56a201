import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { findInCauseChain, SandboxScaleError } from '@sandbox-scale/scale-core';
import { endAndDestroy } from '../http/end-socket';

/**
 * A refusal of the router, answered as agent-sandbox's router (a FastAPI app) answers: the HTTP
 * status and a JSON body `{"detail": "..."}`. The detail is written for the caller, so it never
 * carries a token or what a node said.
 */
export class RouterError extends SandboxScaleError {
  readonly status: number;
  readonly retryAfterSeconds: number | undefined;
  /** Extra response headers (WWW-Authenticate on a 401). */
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    status: number,
    detail: string,
    opts: { retryAfterSeconds?: number; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(detail, { cause: opts.cause });
    this.status = status;
    this.retryAfterSeconds = opts.retryAfterSeconds;
    this.headers = opts.headers ?? {};
  }

  get detail(): string {
    return this.message;
  }
}

export function isRouterError(err: unknown): boolean {
  return findInCauseChain(err, 'RouterError') !== undefined;
}

export function asRouterError(err: unknown): RouterError | undefined {
  return findInCauseChain<RouterError>(err, 'RouterError');
}

const INTERNAL = new RouterError(500, 'An internal error occurred in the proxy.');

/** The RouterError an error answers as: itself, or a 500 that says nothing of the cause. */
export function routerErrorOf(err: unknown): RouterError {
  return asRouterError(err) ?? INTERNAL;
}

function headersOf(e: RouterError, body: Buffer): Record<string, string> {
  return {
    'content-type': 'application/json',
    'content-length': String(body.length),
    ...(e.retryAfterSeconds !== undefined ? { 'retry-after': String(e.retryAfterSeconds) } : {}),
    ...e.headers,
  };
}

const bodyOf = (e: RouterError): Buffer => Buffer.from(JSON.stringify({ detail: e.detail }));

/** Answers a request with the error; a response already under way cannot change, so it is cut instead. */
export function sendRouterError(res: ServerResponse, err: RouterError): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = bodyOf(err);
  res.writeHead(err.status, headersOf(err, body));
  res.end(body);
}

const REASONS: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

/** The same answer written on the raw socket of an upgrade request (no ServerResponse exists there), then closed. */
export function writeRouterErrorTo(socket: Duplex, err: RouterError): void {
  const body = bodyOf(err);
  const lines = Object.entries({ ...headersOf(err, body), connection: 'close' }).map(([k, v]) => `${k}: ${v}`);
  endAndDestroy(
    socket,
    Buffer.concat([Buffer.from(`HTTP/1.1 ${err.status} ${REASONS[err.status] ?? 'Error'}\r\n${lines.join('\r\n')}\r\n\r\n`), body]),
  );
}
