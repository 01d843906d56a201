import { StatusError, statusErrorOf } from '@sandbox-scale/scale-core';
import { asNodeAtCapacity, asSandboxdHttpError } from '@sandbox-scale/sandboxd-client';

/** What a snapshot call was about, for messages a caller can act on. */
export interface SnapshotCallContext {
  /** The verb as errors name it: `snapshot`, `list snapshots`, `delete snapshot`, `claim snapshot`. */
  readonly verb: string;
  readonly node: string;
  /** The snapshot id, or the sandbox's claim id for `snapshot` / `list snapshots`. */
  readonly id: string;
  /** The kind a 404 names; default the snapshots subresource. */
  readonly notFoundKind?: string;
}

/** Status kind for snapshot NotFound: there is no `snapshots` resource, so name the subresource. */
export const SNAPSHOT_KIND = 'sandboxes/snapshots';

export function snapshotNotFound(snapshot: string, namespace: string, name: string, cause?: unknown): StatusError {
  return new StatusError(
    'NotFound',
    `snapshot "${snapshot}" of sandbox ${namespace}/${name} not found`,
    { name: snapshot, group: 'agents.x-k8s.io', kind: SNAPSHOT_KIND },
    cause === undefined ? {} : { cause },
  );
}

/**
 * A sandboxd failure of a snapshot verb as the Status a client can act on:
 * the node's 400/404/409/429/503 keep their meaning instead of all becoming 500, so a caller can
 * tell "retry later" (429/503 with Retry-After) from "will never work" (409 egress lane, volumes).
 * Anything else stays a 500 naming the verb, id and node.
 */
export function snapshotStatusError(err: unknown, ctx: SnapshotCallContext): StatusError {
  const known = statusErrorOf(err);
  if (known !== undefined) return known;
  const where = `${ctx.verb} ${ctx.id} on node "${ctx.node}"`;
  const capacity = asNodeAtCapacity(err);
  if (capacity !== undefined)
    return new StatusError(
      'TooManyRequests',
      `${where}: ${capacity.message || 'node at capacity'}`,
      { retryAfterSeconds: 1 },
      { cause: err },
    );
  const http = asSandboxdHttpError(err);
  const detail = http?.message ? `: ${http.message}` : '';
  switch (http?.statusCode) {
    case 400:
      return new StatusError('BadRequest', `${where}${detail}`, {}, { cause: err });
    case 404:
      return new StatusError(
        'NotFound',
        `${where}${detail || ': not found'}`,
        { name: ctx.id, group: 'agents.x-k8s.io', kind: ctx.notFoundKind ?? SNAPSHOT_KIND },
        { cause: err },
      );
    case 409:
      return new StatusError('Conflict', `${where}${detail}`, {}, { cause: err });
    case 429:
      return new StatusError('TooManyRequests', `${where}${detail}`, { retryAfterSeconds: 1 }, { cause: err });
    case 503:
      return new StatusError('ServiceUnavailable', `${where}${detail}`, { retryAfterSeconds: http.retryAfterSeconds ?? 1 }, { cause: err });
    default: {
      const message = `${where}: ${err instanceof Error ? err.message : String(err)}`;
      return new StatusError('InternalError', message, { causes: [{ reason: 'InternalError', message }] }, { cause: err });
    }
  }
}
