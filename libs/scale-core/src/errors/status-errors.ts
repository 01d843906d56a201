import { SandboxScaleError } from './base';

/** Kubernetes Status reasons and the HTTP code that goes with each. */
export const STATUS_REASON_CODES = {
  BadRequest: 400,
  Unauthorized: 401,
  Forbidden: 403,
  NotFound: 404,
  MethodNotAllowed: 405,
  NotAcceptable: 406,
  AlreadyExists: 409,
  Conflict: 409,
  Expired: 410,
  RequestEntityTooLarge: 413,
  UnsupportedMediaType: 415,
  Invalid: 422,
  TooManyRequests: 429,
  InternalError: 500,
  ServiceUnavailable: 503,
  Timeout: 504,
} as const;

export type StatusReason = keyof typeof STATUS_REASON_CODES;

/** One field-level problem, as in `Status.details.causes[]`. */
export interface StatusCause {
  readonly reason: string;
  readonly field?: string;
  readonly message: string;
}

export interface StatusDetails {
  readonly name?: string;
  readonly group?: string;
  /** For NotFound/AlreadyExists the resource (plural); for Invalid the Kind. */
  readonly kind?: string;
  readonly causes?: readonly StatusCause[];
  readonly retryAfterSeconds?: number;
}

/** Identifies status errors across package copies, where instanceof would fail. */
const STATUS_ERROR_BRAND = Symbol.for('sandbox-scale.StatusError');

/**
 * An error that already knows the Kubernetes Status it becomes: the apiserver turns it into
 * a Status body with this reason and code, whatever wraps it.
 */
export class StatusError extends SandboxScaleError {
  readonly [STATUS_ERROR_BRAND] = true;
  readonly reason: StatusReason;
  readonly code: number;
  readonly details: StatusDetails;
  constructor(reason: StatusReason, message: string, details: StatusDetails = {}, options: { cause?: unknown } = {}) {
    super(message, options);
    this.reason = reason;
    this.code = STATUS_REASON_CODES[reason];
    this.details = details;
  }
}

/** The outermost StatusError in err's cause chain. */
export function statusErrorOf(err: unknown): StatusError | undefined {
  const seen = new Set<unknown>();
  let cur: unknown = err;
  while (cur instanceof Error && !seen.has(cur)) {
    if ((cur as { [STATUS_ERROR_BRAND]?: unknown })[STATUS_ERROR_BRAND] === true) return cur as StatusError;
    seen.add(cur);
    cur = (cur as { cause?: unknown }).cause;
  }
  return undefined;
}

/** A group-qualified resource, as it appears in messages: `sandboxes.agents.x-k8s.io`. */
export interface GroupResource {
  readonly group: string;
  readonly resource: string;
}

const qualified = (gr: GroupResource): string => (gr.group === '' ? gr.resource : `${gr.resource}.${gr.group}`);

/** `sandboxes.agents.x-k8s.io "x" not found`. */
export class NotFoundError extends StatusError {
  constructor(gr: GroupResource, name: string, options: { cause?: unknown } = {}) {
    super('NotFound', `${qualified(gr)} "${name}" not found`, { name, group: gr.group, kind: gr.resource }, options);
  }
}

export class AlreadyExistsError extends StatusError {
  constructor(gr: GroupResource, name: string) {
    super('AlreadyExists', `${qualified(gr)} "${name}" already exists`, { name, group: gr.group, kind: gr.resource });
  }
}

export class ConflictError extends StatusError {
  constructor(message: string, details: StatusDetails = {}) {
    super('Conflict', message, details);
  }
}

export class BadRequestError extends StatusError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super('BadRequest', message, {}, options);
  }
}

/** A group-qualified kind, as Invalid messages spell it: `Sandbox.agents.x-k8s.io`. */
export interface GroupKind {
  readonly group: string;
  readonly kind: string;
}

/**
 * `Sandbox.agents.x-k8s.io "x" is invalid: spec.podTemplate: Required value` — every field
 * problem at once, never only the first (sample-apiserver validation style).
 */
export class InvalidError extends StatusError {
  readonly causes: readonly StatusCause[];
  constructor(gk: GroupKind, name: string, causes: readonly StatusCause[]) {
    const what = gk.group === '' ? gk.kind : `${gk.kind}.${gk.group}`;
    const list = causes.map((c) => (c.field ? `${c.field}: ${c.message}` : c.message));
    const summary = list.length === 1 ? (list[0] ?? '') : `[${list.join(', ')}]`;
    super('Invalid', `${what} "${name}" is invalid: ${summary}`, { name, group: gk.group, kind: gk.kind, causes });
    this.causes = causes;
  }
}

export function isNotFoundError(err: unknown): boolean {
  return statusErrorOf(err)?.reason === 'NotFound';
}

export function isAlreadyExistsError(err: unknown): boolean {
  return statusErrorOf(err)?.reason === 'AlreadyExists';
}

export function isConflictError(err: unknown): boolean {
  return statusErrorOf(err)?.reason === 'Conflict';
}

export function isInvalidError(err: unknown): boolean {
  return statusErrorOf(err)?.reason === 'Invalid';
}

export function isBadRequestError(err: unknown): boolean {
  return statusErrorOf(err)?.reason === 'BadRequest';
}
