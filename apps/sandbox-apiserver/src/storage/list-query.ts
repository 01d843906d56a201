import {
  BadRequestError,
  EVERYTHING_LABEL_SELECTOR,
  assertFieldsSupported,
  parseFieldSelector,
  parseLabelSelector,
  SANDBOX_SELECTABLE_FIELDS,
  StatusError,
  type FieldSelector,
  type LabelSelector,
} from '@sandbox-scale/scale-core';

/** A parsed list/watch query (k8s-api.md §4.9). */
export interface ListQuery {
  readonly namespace: string;
  readonly labels: LabelSelector;
  readonly fields: FieldSelector;
  readonly limit: number;
  /** namespace/name after which this page starts. */
  readonly after: string;
}

interface ContinueToken {
  readonly k: string;
}

export function encodeContinue(lastKey: string): string {
  return Buffer.from(JSON.stringify({ k: lastKey } satisfies ContinueToken)).toString('base64url');
}

function decodeContinue(token: string): string {
  try {
    const parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as unknown;
    if (typeof parsed === 'object' && parsed !== null && typeof (parsed as ContinueToken).k === 'string') return (parsed as ContinueToken).k;
  } catch {
    // fall through to the 400 below
  }
  throw new BadRequestError('continue key is not valid');
}

/** Parses selectors (400 on bad syntax or an unsupported field), limit and continue. */
export function parseListQuery(namespace: string, q: URLSearchParams): ListQuery {
  const labelText = q.get('labelSelector') ?? '';
  const fieldText = q.get('fieldSelector') ?? '';
  const fields = parseFieldSelector(fieldText);
  assertFieldsSupported(fields, SANDBOX_SELECTABLE_FIELDS);
  const limitText = q.get('limit') ?? '';
  const limit = limitText === '' ? 0 : Number(limitText);
  if (!Number.isInteger(limit) || limit < 0) throw new BadRequestError(`limit must be a non-negative integer, got ${JSON.stringify(limitText)}`);
  const cont = q.get('continue') ?? '';
  if (q.get('resourceVersionMatch') && !q.get('resourceVersion') && q.get('watch') !== 'true') {
    throw new StatusError('Invalid', 'resourceVersionMatch is forbidden unless resourceVersion is provided', { causes: [{ reason: 'FieldValueForbidden', field: 'resourceVersionMatch', message: 'Forbidden' }] });
  }
  return {
    namespace,
    labels: labelText === '' ? EVERYTHING_LABEL_SELECTOR : parseLabelSelector(labelText),
    fields,
    limit,
    after: cont === '' ? '' : decodeContinue(cont),
  };
}
