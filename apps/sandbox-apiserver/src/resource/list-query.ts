import { BadRequestError, type FieldSelector, type LabelSelector, parseUntrustedJson, StatusError } from '@sandbox-scale/scale-core';

/** Where a continued list resumes. */
export interface ContinuePoint {
  /** The process that issued the token (ListSnapshots.epoch); 0 for a token that names no snapshot. */
  readonly epoch: number;
  /** The snapshot every page of this list is cut from; 0 = whatever the cache holds now. */
  readonly snapshot: number;
  /** The list resourceVersion the first page served, repeated on every page. */
  readonly rv: number;
  /** namespace/name after which this page starts. */
  readonly after: string;
}

/** A parsed list/watch query. */
export interface ListQuery {
  readonly namespace: string;
  readonly labels: LabelSelector;
  readonly fields: FieldSelector;
  /** The selectors as the request spelled them: what a page served by another replica is asked with. */
  readonly selectorText: { readonly labelSelector: string; readonly fieldSelector: string };
  readonly limit: number;
  readonly continue?: ContinuePoint;
}

interface ContinueToken {
  readonly e?: number;
  readonly s?: number;
  readonly r?: number;
  readonly k: string;
}

export function encodeContinue(p: ContinuePoint): string {
  return Buffer.from(JSON.stringify({ e: p.epoch, s: p.snapshot, r: p.rv, k: p.after } satisfies ContinueToken)).toString('base64url');
}

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/** The resume point a continue token names; 400 when it is not one this server issues. */
export function decodeContinue(token: string): ContinuePoint {
  try {
    const t = parseUntrustedJson(Buffer.from(token, 'base64url').toString('utf8'));
    if (typeof t === 'object' && t !== null && typeof (t as ContinueToken).k === 'string') {
      const { e = 0, s = 0, r = 0, k } = t as ContinueToken;
      // a token without a snapshot (an older server's) resumes by key from the current state
      if (isCount(e) && isCount(s) && isCount(r)) return { epoch: e, snapshot: s, rv: r, after: k };
    }
  } catch {
    // fall through to the 400 below
  }
  throw new BadRequestError('continue key is not valid');
}

export const CONTINUE_EXPIRED_MESSAGE =
  'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.';

/**
 * 410 Expired for a continue token whose snapshot is gone, carrying (as kube-apiserver does in
 * the Status metadata) a token that resumes after the same key from the current state.
 */
export class ContinueExpiredError extends StatusError {
  constructor(readonly inconsistentContinue: string) {
    super('Expired', CONTINUE_EXPIRED_MESSAGE);
  }
}
