import { fieldSelectorMatches, labelSelectorMatches, sandboxFieldSet, type ServedSandbox } from '@sandbox-scale/scale-core';
import type { ListQuery } from './list-query';

/** The part of a query that selects objects: namespace, labels and fields. */
export type Selection = Pick<ListQuery, 'namespace' | 'labels' | 'fields'>;

/** The name a `metadata.name=X` field selector pins the list to, if any. */
export function exactName(q: Pick<ListQuery, 'fields'>): string | undefined {
  return q.fields.requirements.find((r) => r.field === 'metadata.name' && r.operator !== '!=')?.value;
}

/**
 * The node a `status.nodeName=X` field selector pins the list to, if any: a row of another node
 * is skipped before its object is built (a list by node over a million sandboxes would otherwise
 * build a million objects to keep a few thousand).
 */
export function exactNode(q: Pick<ListQuery, 'fields'>): string | undefined {
  return q.fields.requirements.find((r) => r.field === 'status.nodeName' && r.operator !== '!=')?.value;
}

/** Whether a list or watch with this query serves the sandbox. */
export function matches(q: Selection, s: ServedSandbox): boolean {
  if (q.namespace !== '' && s.metadata.namespace !== q.namespace) return false;
  if (q.labels.requirements.length > 0 && !labelSelectorMatches(q.labels, s.metadata.labels)) return false;
  return q.fields.requirements.length === 0 || fieldSelectorMatches(q.fields, sandboxFieldSet(s));
}
