import { findInCauseChain } from './base';
import { isNodeAtCapacity, noWarmCapacityOf, NO_WARM_CAPACITY_RETRY_AFTER_SECONDS } from './capacity-errors';
import { STATUS_REASON_CODES, statusErrorOf, type StatusDetails, type StatusReason } from './status-errors';

/** A Kubernetes `Status` failure body (k8s-api.md §4.13). `code` is also the HTTP status. */
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
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, ...(hasDetails ? { details } : {}), code: STATUS_REASON_CODES[reason] };
}

/**
 * The Status an API handler answers for any thrown value (scale-contracts §9.7):
 * a StatusError anywhere in the chain keeps its reason (NotFound stays 404 through wrapping);
 * no warm capacity is a retryable 503 with retryAfterSeconds; everything else — sandboxd
 * failures, missing routing, bugs — is a 500 InternalError carrying the outermost message.
 */
export function statusForError(err: unknown): KubeStatus {
  const statusErr = statusErrorOf(err);
  if (statusErr !== undefined) return build(statusErr.reason, statusErr.message, statusErr.details);
  const noWarm = noWarmCapacityOf(err);
  if (noWarm !== undefined) {
    return build('ServiceUnavailable', noWarm.message, { retryAfterSeconds: noWarm.retryAfterSeconds });
  }
  if (isNodeAtCapacity(err)) {
    const message = findInCauseChain(err, 'NodeAtCapacityError')?.message ?? 'node at capacity';
    return build('ServiceUnavailable', message, { retryAfterSeconds: NO_WARM_CAPACITY_RETRY_AFTER_SECONDS });
  }
  const message = err instanceof Error ? err.message : String(err);
  return build('InternalError', message, { causes: [{ reason: 'InternalError', message }] });
}
