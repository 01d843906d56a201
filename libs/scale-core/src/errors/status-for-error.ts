import { findInCauseChain } from './base';
import { noWarmCapacityOf, NO_WARM_CAPACITY_RETRY_AFTER_SECONDS } from './capacity-errors';
import { STATUS_REASON_CODES, statusErrorOf, type StatusDetails, type StatusReason } from './status-errors';

/** A Kubernetes `Status` failure body. `code` is also the HTTP status. */
export interface KubeStatus {
  readonly kind: 'Status';
  readonly apiVersion: 'v1';
  readonly metadata: Record<string, never>;
  readonly status: 'Failure';
  readonly message: string;
  readonly reason: StatusReason;
  readonly details?: StatusDetails;
  readonly code: number;
}

function build(reason: StatusReason, message: string, details?: StatusDetails): KubeStatus {
  const hasDetails = details !== undefined && Object.keys(details).length > 0;
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    ...(hasDetails ? { details } : {}),
    code: STATUS_REASON_CODES[reason],
  };
}

/**
 * What every 500 says. The error's own text can hold node URLs, response bodies of other
 * services or stack details, so it goes to the log of the answering process, never to a client.
 */
export const INTERNAL_ERROR_MESSAGE = 'Internal error occurred: the request could not be completed; the details are in the server log';

const internalError = (): KubeStatus =>
  build('InternalError', INTERNAL_ERROR_MESSAGE, { causes: [{ reason: 'InternalError', message: INTERNAL_ERROR_MESSAGE }] });

/**
 * The Status an API handler answers for any thrown value:
 * a StatusError anywhere in the chain keeps its reason (NotFound stays 404 through wrapping);
 * no warm capacity is a retryable 503 with retryAfterSeconds; everything else — sandboxd
 * failures, missing routing, bugs — is a 500 InternalError with a generic message (the caller
 * logs the error itself).
 */
export function statusForError(err: unknown): KubeStatus {
  const statusErr = statusErrorOf(err);
  if (statusErr !== undefined)
    return statusErr.reason === 'InternalError' ? internalError() : build(statusErr.reason, statusErr.message, statusErr.details);
  const noWarm = noWarmCapacityOf(err);
  if (noWarm !== undefined) {
    return build('ServiceUnavailable', noWarm.message, { retryAfterSeconds: noWarm.retryAfterSeconds });
  }
  // sandboxd-client owns NodeAtCapacityError and builds on this package, so it is found by name.
  const atCapacity = findInCauseChain(err, 'NodeAtCapacityError');
  if (atCapacity !== undefined) {
    const message = atCapacity.message || 'node at capacity';
    return build('ServiceUnavailable', message, { retryAfterSeconds: NO_WARM_CAPACITY_RETRY_AFTER_SECONDS });
  }
  return internalError();
}
