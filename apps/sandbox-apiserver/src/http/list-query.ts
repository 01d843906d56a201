import {
  BadRequestError,
  EVERYTHING_LABEL_SELECTOR,
  assertFieldsSupported,
  parseFieldSelector,
  parseLabelSelector,
  SANDBOX_SELECTABLE_FIELDS,
  StatusError,
} from '@sandbox-scale/scale-core';
import { decodeContinue, type ListQuery } from '../resource/list-query';
import { isWatchQuery } from './query-params';

/**
 * The list/watch query of a request: selectors (400 on bad syntax or a field the resource does
 * not select on), limit and continue.
 */
export function parseListQuery(
  namespace: string,
  q: URLSearchParams,
  selectableFields: readonly string[] = SANDBOX_SELECTABLE_FIELDS,
): ListQuery {
  const labelText = q.get('labelSelector') ?? '';
  const fieldText = q.get('fieldSelector') ?? '';
  const fields = parseFieldSelector(fieldText);
  assertFieldsSupported(fields, selectableFields);
  const limitText = q.get('limit') ?? '';
  const limit = limitText === '' ? 0 : Number(limitText);
  if (!Number.isInteger(limit) || limit < 0)
    throw new BadRequestError(`limit must be a non-negative integer, got ${JSON.stringify(limitText)}`);
  const cont = q.get('continue') ?? '';
  if (q.get('resourceVersionMatch') && !q.get('resourceVersion') && !isWatchQuery(q)) {
    throw new StatusError('Invalid', 'resourceVersionMatch is forbidden unless resourceVersion is provided', {
      causes: [{ reason: 'FieldValueForbidden', field: 'resourceVersionMatch', message: 'Forbidden' }],
    });
  }
  return {
    namespace,
    labels: labelText === '' ? EVERYTHING_LABEL_SELECTOR : parseLabelSelector(labelText),
    fields,
    selectorText: { labelSelector: labelText, fieldSelector: fieldText },
    limit,
    ...(cont === '' ? {} : { continue: decodeContinue(cont) }),
  };
}
