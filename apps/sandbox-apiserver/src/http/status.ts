import type { ServerResponse } from 'node:http';
import { sendKubeStatus } from '@sandbox-scale/kube-runtime';
import { SANDBOX_GROUP, StatusError, statusErrorOf, statusForError, type KubeStatus, type StatusReason } from '@sandbox-scale/scale-core';
import { ContinueExpiredError } from '../resource/list-query';

/** A Status failure with the given reason, for handler code that knows the answer. */
export function statusError(reason: StatusReason, message: string, retryAfterSeconds?: number): StatusError {
  return new StatusError(reason, message, retryAfterSeconds === undefined ? {} : { retryAfterSeconds });
}

/** The Status body for any thrown value; 503/429/504 carry Retry-After. */
export function statusOf(err: unknown): KubeStatus {
  return statusForError(err);
}

/** Writes the Status of err; the HTTP code is the Status code, and 503/429/504 always carry Retry-After. */
export function sendStatus(res: ServerResponse, err: unknown): KubeStatus {
  const status = statusOf(err);
  // an expired continue token is answered with one that resumes inconsistently, as kube does
  const expired = statusErrorOf(err);
  const body = expired instanceof ContinueExpiredError ? { ...status, metadata: { continue: expired.inconsistentContinue } } : status;
  sendKubeStatus(res, status, { body, busyRetryAfterSeconds: 1 });
  return status;
}

/** `sandboxes.agents.x-k8s.io "x" is forbidden: User "u" cannot get resource ...`. */
export function forbiddenMessage(a: {
  user: string;
  verb: string;
  resource?: string;
  subresource?: string;
  name?: string;
  namespace?: string;
  path?: string;
  reason?: string;
}): string {
  const suffix = a.reason ? `: ${a.reason}` : '';
  if (a.resource === undefined) return `forbidden: User "${a.user}" cannot ${a.verb} path "${a.path ?? ''}"${suffix}`;
  const res = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
  const head = a.name ? `${a.resource}.${SANDBOX_GROUP} "${a.name}" is forbidden` : `${a.resource}.${SANDBOX_GROUP} is forbidden`;
  const scope = a.namespace ? ` in the namespace "${a.namespace}"` : ' at the cluster scope';
  return `${head}: User "${a.user}" cannot ${a.verb} resource "${res}" in API group "${SANDBOX_GROUP}"${scope}${suffix}`;
}
