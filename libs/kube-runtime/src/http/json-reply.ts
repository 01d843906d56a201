import type { ServerResponse } from 'node:http';
import type { KubeStatus } from '@sandbox-scale/scale-core';

/** Writes a JSON body with its status code. */
export function sendJson(res: ServerResponse, code: number, body: unknown, headers: Record<string, string> = {}): void {
  // encoded once: a page of 5,000 sandboxes is megabytes, and byteLength then end(string) encodes it twice
  const bytes = Buffer.from(JSON.stringify(body));
  res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': bytes.length, ...headers });
  res.end(bytes);
}

export interface StatusReplyOptions {
  /** What is written instead of the Status itself (the Status with a continue token, say). */
  readonly body?: unknown;
  /** Retry-After for a 429, 503 or 504 whose Status names no retryAfterSeconds; none by default. */
  readonly busyRetryAfterSeconds?: number;
}

/**
 * Writes a Kubernetes Status as the answer, its HTTP code the Status code; a Status that names
 * `details.retryAfterSeconds` also says it in a Retry-After header. A response already under
 * way cannot change its status: it is ended as it is.
 */
export function sendKubeStatus(res: ServerResponse, status: KubeStatus, opts: StatusReplyOptions = {}): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const headers: Record<string, string> = {};
  const retry = status.details?.retryAfterSeconds ?? (isBusy(status.code) ? opts.busyRetryAfterSeconds : undefined);
  if (retry !== undefined) headers['Retry-After'] = String(retry);
  sendJson(res, status.code, opts.body ?? status, headers);
}

const isBusy = (code: number): boolean => code === 503 || code === 429 || code === 504;
