import { findInCauseChain, SandboxScaleError } from './base';
import { NodeAtCapacityError } from './capacity-errors';

/** sandboxd answered a status the operation does not accept. `errorMessage` is its `{"error"}` text. */
export class SandboxdHttpError extends SandboxScaleError {
  readonly operation: SandboxdOp;
  readonly statusCode: number;
  readonly errorMessage: string;
  readonly retryAfterSeconds: number | undefined;
  constructor(operation: SandboxdOp, statusCode: number, errorMessage: string, options: { retryAfterSeconds?: number; cause?: unknown } = {}) {
    super(`sandboxd ${operation}: HTTP ${statusCode}${errorMessage === '' ? '' : `: ${errorMessage}`}`, { cause: options.cause });
    this.operation = operation;
    this.statusCode = statusCode;
    this.errorMessage = errorMessage;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

/**
 * What every error named SandboxdHttpError carries, whichever package built it (predicates
 * match by name, so a client library's own class with these fields is found too).
 */
export type SandboxdHttpErrorLike = Error & { readonly statusCode: number; readonly operation?: string; readonly retryAfterSeconds?: number | undefined };

/** The SandboxdHttpError in err's cause chain (to read its status), or undefined. */
export function sandboxdHttpErrorOf(err: unknown): SandboxdHttpErrorLike | undefined {
  const found = findInCauseChain<SandboxdHttpErrorLike>(err, 'SandboxdHttpError');
  return found !== undefined && typeof found.statusCode === 'number' ? found : undefined;
}

export function isSandboxdHttpError(err: unknown): boolean {
  return sandboxdHttpErrorOf(err) !== undefined;
}

/** A sandboxd 404 that is not success for its operation (unknown sandbox, wrong token). */
export function isSandboxdNotFound(err: unknown): boolean {
  return sandboxdHttpErrorOf(err)?.statusCode === 404;
}

/**
 * Which statuses each sandboxd operation treats as success (scale-contracts §4, sandboxd-api.md §5).
 * `capacity` operations map 429, and a 200 that delivered no id, to NodeAtCapacityError.
 */
const OPS = {
  claim: { ok: 'exactly200', capacity: true },
  claimCheckpoint: { ok: 'any2xx', capacity: true },
  fork: { ok: 'any2xx', capacity: true },
  release: { ok: '204or404', capacity: false },
  deleteCheckpoint: { ok: '204or404', capacity: false },
  hibernate: { ok: 'exactly204', capacity: false },
  wake: { ok: 'exactly204', capacity: false },
  setPools: { ok: 'any2xx', capacity: false },
  renew: { ok: 'any2xx', capacity: false },
  checkpoint: { ok: 'any2xx', capacity: false },
  promote: { ok: 'any2xx', capacity: false },
  drain: { ok: 'any2xx', capacity: false },
  info: { ok: 'exactly200', capacity: false },
  checkpoints: { ok: 'exactly200', capacity: false },
  sandbox: { ok: 'exactly200', capacity: false },
  sandboxes: { ok: 'exactly200', capacity: false },
  stats: { ok: 'exactly200', capacity: false },
} as const satisfies Record<string, { ok: 'exactly200' | 'exactly204' | 'any2xx' | '204or404'; capacity: boolean }>;

export type SandboxdOp = keyof typeof OPS;

/** What a client knows about a sandboxd reply once the body is read. */
export interface SandboxdReply {
  readonly statusCode: number;
  /** The `error` field of a JSON error body, or '' when there is none. */
  readonly errorMessage?: string;
  /** For claims: the delivered id; '' or absent means nothing was handed over. */
  readonly id?: string;
  /** Peers a capacity-less node suggested. */
  readonly redirect?: readonly string[];
  readonly retryAfterSeconds?: number;
  readonly node?: string;
}

function statusAccepted(op: SandboxdOp, status: number): boolean {
  switch (OPS[op].ok) {
    case 'exactly200':
      return status === 200;
    case 'exactly204':
      return status === 204;
    case '204or404':
      return status === 204 || status === 404;
    case 'any2xx':
      return status >= 200 && status < 300;
  }
}

/** Claim-like ops deliver an id; a 2xx without one is a redirect-only or empty answer. */
const DELIVERS_ID: ReadonlySet<SandboxdOp> = new Set<SandboxdOp>(['claim', 'claimCheckpoint']);

/**
 * The sandboxd error mapping of scale-contracts §4 and §10: undefined when the reply is a
 * success for `op`, NodeAtCapacityError for capacity misses (429, or a claim 200 with no id),
 * and SandboxdHttpError for every other status.
 */
export function sandboxdReplyError(op: SandboxdOp, reply: SandboxdReply): Error | undefined {
  const { statusCode } = reply;
  const capacity = OPS[op].capacity;
  const redirect = reply.redirect ?? [];
  if (capacity && statusCode === 429) {
    return new NodeAtCapacityError(`sandboxd ${op}: node at capacity${reply.errorMessage ? `: ${reply.errorMessage}` : ''}`, { node: reply.node, statusCode, redirect });
  }
  if (statusAccepted(op, statusCode)) {
    if (DELIVERS_ID.has(op) && (reply.id === undefined || reply.id === '')) {
      const why = redirect.length > 0 ? `redirected to ${redirect.join(', ')}` : 'no sandbox id in the reply';
      return new NodeAtCapacityError(`sandboxd ${op}: node at capacity: ${why}`, { node: reply.node, statusCode, redirect });
    }
    return undefined;
  }
  return new SandboxdHttpError(op, statusCode, reply.errorMessage ?? '', reply.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: reply.retryAfterSeconds });
}
