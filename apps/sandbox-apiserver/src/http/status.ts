import type { ServerResponse } from 'node:http';
import { SANDBOX_GROUP, StatusError, statusErrorOf, statusForError, type KubeStatus, type StatusReason } from '@sandbox-scale/scale-core';
import { ContinueExpiredError } from '../resource/list-query';

/** A Status failure with the given reason, for handler code that knows the answer. */
export function statusError(reason: StatusReason, message: string, retryAfterSeconds?: number): StatusError {
  return new StatusError(reason, message, retryAfterSeconds === undefined ? {} : { retryAfterSeconds });
}

/** Writes any JSON body with the status code. */
export function sendJson(res: ServerResponse, code: number, body: unknown, headers: Record<string, string> = {}): void {
  // encoded once: a page of 5,000 sandboxes is megabytes, and byteLength then end(string) encodes it twice
  const bytes = Buffer.from(JSON.stringify(body));
  res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': bytes.length, ...headers });
  res.end(bytes);
}

/** The Status body for any thrown value (k8s-api.md §4.13); 503/429/504 carry Retry-After. */
export function statusOf(err: unknown): KubeStatus {
  return statusForError(err);
}

/** Writes the Status of err; the HTTP code is the Status code. */
export function sendStatus(res: ServerResponse, err: unknown): KubeStatus {
  const status = statusOf(err);
  const headers: Record<string, string> = {};
  const retry = status.details?.retryAfterSeconds;
  if (retry !== undefined) headers['Retry-After'] = String(retry);
  else if (status.code === 503 || status.code === 429 || status.code === 504) headers['Retry-After'] = '1';
  if (res.headersSent) {
    res.end();
    return status;
  }
  // an expired continue token is answered with one that resumes inconsistently, as kube does
  const expired = statusErrorOf(err);
  const body = expired instanceof ContinueExpiredError ? { ...status, metadata: { continue: expired.inconsistentContinue } } : status;
  sendJson(res, status.code, body, headers);
  return status;
}

/** `sandboxes.agents.x-k8s.io "x" is forbidden: User "u" cannot get resource ...` (k8s-api.md §4.5). */
export function forbiddenMessage(a: { user: string; verb: string; resource?: string; subresource?: string; name?: string; namespace?: string; path?: string; reason?: string }): string {
  const suffix = a.reason ? `: ${a.reason}` : '';
  if (a.resource === undefined) return `forbidden: User "${a.user}" cannot ${a.verb} path "${a.path ?? ''}"${suffix}`;
  const res = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  const head = a.name ? `${a.resource}.${SANDBOX_GROUP} "${a.name}" is forbidden` : `${a.resource}.${SANDBOX_GROUP} is forbidden`;
  const scope = a.namespace ? ` in the namespace "${a.namespace}"` : ' at the cluster scope';
  return `${head}: User "${a.user}" cannot ${a.verb} resource "${res}" in API group "${SANDBOX_GROUP}"${scope}${suffix}`;
}
