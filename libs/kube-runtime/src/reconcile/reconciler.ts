import type { Logger } from '../log/logger';

/**
 * The controller-runtime contract: a request names an object, nothing more. The reconciler
 * reads current state from caches (level-based, never trusting the event that woke it), acts,
 * and answers with a result; throwing means "retry with backoff" and the result is ignored.
 */
export interface ReconcileRequest {
  /** '' for cluster-scoped objects. */
  namespace: string;
  name: string;
}

export interface ReconcileResult {
  /** Run again after this delay (time-based work: TTL, cadence); resets the error backoff. */
  requeueAfterMs?: number;
}

export interface ReconcileContext {
  /** Aborted when the controller stops: long calls should pass it on. */
  signal: AbortSignal;
  /** Carries controller, reconcileId, namespace and name. */
  log: Logger;
  reconcileId: string;
}

export interface Reconciler {
  reconcile(req: ReconcileRequest, ctx: ReconcileContext): Promise<ReconcileResult | void>;
}

export function requestKey(req: ReconcileRequest): string {
  return req.namespace ? `${req.namespace}/${req.name}` : req.name;
}

export function parseRequestKey(key: string): ReconcileRequest {
  const i = key.indexOf('/');
  return i === -1 ? { namespace: '', name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}
