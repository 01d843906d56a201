import { apiStatusOf } from '@sandbox-scale/kube-runtime';
import { findInCauseChain, isArchiveError, SandboxScaleError } from '@sandbox-scale/scale-core';

/** The tar codec's error (packDirectory, extractTar), from scale-core, where the codec lives, so there is one such class. */
export { ArchiveError, isArchiveError } from '@sandbox-scale/scale-core';

/**
 * Errors the SDK throws. Every one extends SandboxScaleError, so the project's `is…` predicates
 * (which walk `cause`) work on them, and callers never compare messages or HTTP codes.
 */
export class SdkError extends SandboxScaleError {}

/** What a request was trying to do, so a denial can name the verb and resource. */
export interface RequestTarget {
  verb: string;
  /** `sandboxes/pause`, `sandboxclaims`, `secrets`, or `claims` (the fast path) */
  resource: string;
  group?: string;
  namespace?: string;
  name?: string;
}

/** A non-2xx answer from the API server or the fast path, with its Kubernetes Status fields. */
export class ApiError extends SdkError {
  readonly code: number;
  readonly reason: string | undefined;
  readonly target: RequestTarget;
  /** Seconds the server asked to wait before trying again (Retry-After, or the Status details). */
  readonly retryAfterSeconds: number | undefined;
  constructor(message: string, o: { code: number; reason?: string; target: RequestTarget; retryAfterSeconds?: number; cause?: unknown }) {
    super(message, { cause: o.cause });
    this.code = o.code;
    this.reason = o.reason;
    this.target = o.target;
    this.retryAfterSeconds = o.retryAfterSeconds;
  }
}

/** 403: RBAC (or the fast path's SubjectAccessReview) refused the verb on the resource. */
export class ForbiddenError extends ApiError {}
/** 401: the credentials were refused (expired token, or a fast-path token minted for another audience). */
export class UnauthorizedError extends ApiError {}
export class NotFoundError extends ApiError {}
export class AlreadyExistsError extends ApiError {}
/** 503 or 429 answered before anything was claimed: no warm VM now, or a per-namespace cap. Safe to retry. */
export class UnavailableError extends ApiError {}
/** 400: the server refused the request itself (an empty argv, a path it will not touch, a port out of range). */
export class BadRequestError extends ApiError {}
/** 413: a body or a command's output over the server's limit. */
export class TooLargeError extends ApiError {}
/** 504: the command outlived its time limit (the node killed it), or the server gave up waiting. */
export class DeadlineExceededError extends ApiError {}

/** The claim did not become Ready in time; the SandboxClaim (if one was created) is left for the caller to release. */
export class ClaimTimeoutError extends SdkError {}
/** The claim reports a terminal failure (Ready=False with a reason that will not change by waiting). */
export class ClaimFailedError extends SdkError {
  readonly reason: string;
  constructor(message: string, reason: string, options?: { cause?: unknown }) {
    super(message, options);
    this.reason = reason;
  }
}
/** No way to reach the fast path from here: no Service, no URL given, or no token for its audience. */
export class FastPathUnavailableError extends SdkError {}
/** The operation was cancelled through its AbortSignal. */
export class AbortedError extends SdkError {}
/** An argument the SDK refuses before sending anything (a port outside 1-65535, an empty path). */
export class InvalidArgumentError extends SdkError {}
/** A file operation met the other kind of entry: a directory where a file was expected, or the reverse. */
export class WrongFileKindError extends SdkError {
  readonly path: string;
  /** What the path is: `dir` or `file`. */
  readonly kind: 'dir' | 'file';
  constructor(message: string, o: { path: string; kind: 'dir' | 'file'; cause?: unknown }) {
    super(message, { cause: o.cause });
    this.path = o.path;
    this.kind = o.kind;
  }
}
/**
 * A fast-path claim whose answer was lost after the request was sent (cancelled in flight, a
 * 5xx, a dropped connection): a sandbox may have been handed over, and claim-controller then
 * records it as a SandboxClaim of the requested name. The message says how to release it.
 */
export class ClaimOutcomeUnknownError extends SdkError {
  readonly claimNamespace: string;
  readonly claimName: string;
  constructor(message: string, o: { namespace: string; name: string; cause?: unknown }) {
    super(message, { cause: o.cause });
    this.claimNamespace = o.namespace;
    this.claimName = o.name;
  }
}

const has =
  (name: string) =>
  (err: unknown): boolean =>
    findInCauseChain(err, name) !== undefined;
/** Any error the SDK threw on purpose (an HTTP answer, a timeout, a refusal, a bad archive), anywhere in the cause chain. */
export function isSdkError(err: unknown): boolean {
  // ArchiveError is scale-core's (the tar codec is shared), so it is not an SdkError by class
  if (isArchiveError(err)) return true;
  const seen = new Set<unknown>();
  for (let cur: unknown = err; cur instanceof Error && !seen.has(cur); cur = (cur as { cause?: unknown }).cause) {
    if (cur instanceof SdkError) return true;
    seen.add(cur);
  }
  return false;
}
const API_ERRORS = [
  'ApiError',
  'ForbiddenError',
  'UnauthorizedError',
  'NotFoundError',
  'AlreadyExistsError',
  'UnavailableError',
  'BadRequestError',
  'TooLargeError',
  'DeadlineExceededError',
];
export const isApiError = (err: unknown): boolean => API_ERRORS.some((n) => has(n)(err));
export const isForbidden = has('ForbiddenError');
export const isUnauthorized = has('UnauthorizedError');
export const isNotFound = has('NotFoundError');
export const isAlreadyExists = has('AlreadyExistsError');
export const isUnavailable = has('UnavailableError');
export const isBadRequest = has('BadRequestError');
export const isTooLarge = has('TooLargeError');
export const isDeadlineExceeded = has('DeadlineExceededError');
export const isInvalidArgument = has('InvalidArgumentError');
export const isWrongFileKind = has('WrongFileKindError');
export const isClaimTimeout = has('ClaimTimeoutError');
export const isClaimFailed = has('ClaimFailedError');
export const isFastPathUnavailable = has('FastPathUnavailableError');
export const isAborted = has('AbortedError');
export const isClaimOutcomeUnknown = has('ClaimOutcomeUnknownError');

function describe(t: RequestTarget): string {
  const res = t.group ? `${t.resource}.${t.group}` : t.resource;
  return `${t.verb} ${res}${t.name ? ` "${t.name}"` : ''}${t.namespace ? ` in namespace "${t.namespace}"` : ''}`;
}

function retryAfterOf(err: unknown): number | undefined {
  const headers = (err as { headers?: Record<string, string> }).headers ?? {};
  const header = Object.entries(headers).find(([k]) => k.toLowerCase() === 'retry-after')?.[1];
  if (header !== undefined && /^\d+$/.test(header.trim())) return Number(header.trim());
  const body = (err as { body?: unknown }).body;
  if (typeof body !== 'string') return undefined;
  try {
    const seconds = (JSON.parse(body) as { details?: { retryAfterSeconds?: unknown } }).details?.retryAfterSeconds;
    return typeof seconds === 'number' ? seconds : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Turns what kubeRequest throws into a typed error naming the request. A 403 reads
 * `cannot create sandboxes/pause in namespace "x": <server's reason>`, which is what a user
 * needs to ask for the right RoleBinding. Anything that is not an HTTP answer (a refused
 * connection, an abort) passes through unchanged, as the cause of nothing.
 */
export function toSdkError(err: unknown, target: RequestTarget, signal?: AbortSignal): unknown {
  if (signal?.aborted) return new AbortedError(`${describe(target)}: cancelled`, { cause: err });
  if (err instanceof SdkError) return err;
  const s = apiStatusOf(err);
  if (!s) return err;
  const o = { code: s.code, reason: s.reason, target, retryAfterSeconds: retryAfterOf(err), cause: err };
  const said = s.message ?? ((err as { body?: unknown }).body as string | undefined)?.toString().trim().slice(0, 300) ?? '';
  switch (s.code) {
    case 401:
      return new UnauthorizedError(`unauthorized to ${describe(target)}: ${said || 'the credentials were refused'}`, o);
    case 403:
      return new ForbiddenError(`forbidden: cannot ${describe(target)}${said ? `: ${said}` : ''}`, o);
    case 404:
      return new NotFoundError(`not found: ${describe(target)}${said ? `: ${said}` : ''}`, o);
    case 409:
      return s.reason === 'AlreadyExists'
        ? new AlreadyExistsError(`${describe(target)}: ${said}`, o)
        : new ApiError(`${describe(target)}: ${said}`, o);
    case 429:
    case 503:
      return new UnavailableError(`${describe(target)}: ${said || 'service unavailable'}`, o);
    default: {
      const message = `${describe(target)}: HTTP ${s.code}${said ? `: ${said}` : ''}`;
      if (s.code === 400) return new BadRequestError(message, o);
      if (s.code === 413) return new TooLargeError(message, o);
      if (s.code === 504) return new DeadlineExceededError(message, o);
      return new ApiError(message, o);
    }
  }
}
