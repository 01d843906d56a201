import { SandboxScaleError, findInCauseChain } from '@sandbox-scale/scale-core';
import type { AgentErrorKind } from './data-plane';

/**
 * The node handed over nothing: a claim (or fork, or checkpoint claim) answered 429, or a
 * claim answered 200 with a redirect and no id while redirects are not followed. The claim
 * gateway maps this to "fall back"; `candidates` are the peers the node suggested.
 */
export class NodeAtCapacityError extends SandboxScaleError {
  readonly statusCode: number;
  /** Peer addresses exactly as the node sent them (`host:port` or an origin). */
  readonly redirect: readonly string[];
  /** The same peers as base URLs, the scheme inherited from the node that was dialed. */
  readonly candidates: readonly string[];
  /** Copy into the retry at a candidate (volume claims only). */
  readonly requirePromoted: boolean;

  constructor(opts: {
    statusCode: number;
    message: string;
    redirect?: readonly string[];
    candidates?: readonly string[];
    requirePromoted?: boolean;
    cause?: unknown;
  }) {
    super(opts.message || 'node at capacity', { cause: opts.cause });
    this.statusCode = opts.statusCode;
    this.redirect = opts.redirect ?? [];
    this.candidates = opts.candidates ?? [];
    this.requirePromoted = opts.requirePromoted ?? false;
  }
}

/** Any status the call did not expect. `message` is the body's `error` field, or empty. */
export class SandboxdHttpError extends SandboxScaleError {
  readonly statusCode: number;
  readonly operation: string;
  /** Seconds from a `Retry-After` header (503), when the node sent one. */
  readonly retryAfterSeconds: number | undefined;

  constructor(opts: { operation: string; statusCode: number; message: string; retryAfterSeconds?: number }) {
    super(opts.message);
    this.operation = opts.operation;
    this.statusCode = opts.statusCode;
    this.retryAfterSeconds = opts.retryAfterSeconds;
  }

  /** The same as statusCode, under the name callers of the data plane read. */
  get status(): number {
    return this.statusCode;
  }
}

/** A success reply that is not valid JSON or does not match the reply schema. */
export class MalformedReplyError extends SandboxScaleError {
  readonly operation: string;
  readonly statusCode: number;

  constructor(opts: { operation: string; statusCode: number; detail: string; cause?: unknown }) {
    super(`${opts.operation}: malformed reply: ${opts.detail}`, { cause: opts.cause });
    this.operation = opts.operation;
    this.statusCode = opts.statusCode;
  }
}

/** A reply body larger than the read cap; the connection was closed rather than drained. */
export class ReplyTooLargeError extends SandboxScaleError {
  readonly operation: string;
  readonly limitBytes: number;

  constructor(opts: { operation: string; limitBytes: number; detail?: string }) {
    super(`${opts.operation}: reply exceeds ${opts.detail ?? `${opts.limitBytes} bytes`}`);
    this.operation = opts.operation;
    this.limitBytes = opts.limitBytes;
  }
}

/** The request never got a reply: connection refused or reset, DNS, socket closed early. */
export class SandboxdTransportError extends SandboxScaleError {
  readonly operation: string;
  readonly url: string;

  constructor(opts: { operation: string; url: string; cause: unknown }) {
    super(`${opts.operation} ${opts.url}: ${describeCause(opts.cause)}`, { cause: opts.cause });
    this.operation = opts.operation;
    this.url = opts.url;
  }
}

/** A call refused before any request was sent (e.g. an empty id). */
export class SandboxdArgumentError extends SandboxScaleError {}

/** The guest agent answered an RPC with an `error` frame; `kind` is the agent's error class. */
export class AgentError extends SandboxScaleError {
  readonly kind: AgentErrorKind;
  readonly operation: string;

  constructor(opts: { operation: string; kind: AgentErrorKind; message: string }) {
    super(opts.message || `${opts.operation}: ${opts.kind}`);
    this.kind = opts.kind;
    this.operation = opts.operation;
  }
}

/**
 * The agent connection broke the protocol (a malformed or oversized frame, an unexpected frame)
 * or closed in the middle of an RPC. The connection is unusable afterwards.
 */
export class AgentProtocolError extends SandboxScaleError {
  readonly operation: string;

  constructor(opts: { operation: string; detail: string; cause?: unknown }) {
    super(`${opts.operation}: ${opts.detail}`, { cause: opts.cause });
    this.operation = opts.operation;
  }
}

function describeCause(cause: unknown): string {
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    return typeof code === 'string' ? `${code}: ${cause.message}` : cause.message;
  }
  return String(cause);
}

export function isNodeAtCapacity(err: unknown): boolean {
  return findInCauseChain(err, 'NodeAtCapacityError') !== undefined;
}

export function asNodeAtCapacity(err: unknown): NodeAtCapacityError | undefined {
  return findInCauseChain<NodeAtCapacityError>(err, 'NodeAtCapacityError');
}

export function isSandboxdHttpError(err: unknown): boolean {
  return findInCauseChain(err, 'SandboxdHttpError') !== undefined;
}

export function asSandboxdHttpError(err: unknown): SandboxdHttpError | undefined {
  return findInCauseChain<SandboxdHttpError>(err, 'SandboxdHttpError');
}

/** A SandboxdHttpError with status 404 anywhere in the cause chain. */
export function isNotFound(err: unknown): boolean {
  return asSandboxdHttpError(err)?.statusCode === 404;
}

export function isMalformedReply(err: unknown): boolean {
  return findInCauseChain(err, 'MalformedReplyError') !== undefined;
}

export function isReplyTooLarge(err: unknown): boolean {
  return findInCauseChain(err, 'ReplyTooLargeError') !== undefined;
}

/**
 * The node answered, but not with a reply that can be used: a 5xx, a malformed body or one past
 * the read cap. A claim that ends this way may still have handed the VM over, so the caller asks
 * the node (by claim_ref) before claiming anywhere else.
 */
export function isUnusableReply(err: unknown): boolean {
  const status = asSandboxdHttpError(err)?.statusCode;
  return isMalformedReply(err) || isReplyTooLarge(err) || (status !== undefined && status >= 500);
}

/** The error itself is an AgentError (by name, so it holds across package copies); asAgentError walks `cause`. */
export function isAgentError(err: unknown): err is AgentError {
  return err instanceof Error && err.name === 'AgentError' && 'kind' in err;
}

export function asAgentError(err: unknown): AgentError | undefined {
  return findInCauseChain<AgentError>(err, 'AgentError');
}

export function isAgentProtocolError(err: unknown): boolean {
  return findInCauseChain(err, 'AgentProtocolError') !== undefined;
}

export function isTransportError(err: unknown): boolean {
  return findInCauseChain(err, 'SandboxdTransportError') !== undefined;
}

/** The caller's signal fired (AbortController.abort or AbortSignal.timeout). */
export function isAbortError(err: unknown): boolean {
  // Checked by name first: the platform DOMException may come from another realm (jest, vm).
  if (hasAbortName(err)) return true;
  return findInCauseChain(err, 'AbortError') !== undefined || findInCauseChain(err, 'TimeoutError') !== undefined;
}

function hasAbortName(err: unknown): boolean {
  if (typeof err !== 'object' || err === null || !('name' in err)) return false;
  return err.name === 'AbortError' || err.name === 'TimeoutError';
}
