import {
  fieldSelectorMatches,
  labelSelectorMatches,
  sandboxFieldSet,
  sandboxLabelsFor,
  type InventoryEntry,
  type ServedSandbox,
} from '@sandbox-scale/scale-core';
import type { ListQuery } from './list-query';

/** The part of a query that selects objects: namespace, labels and fields. */
export type Selection = Pick<ListQuery, 'namespace' | 'labels' | 'fields'>;

/** The name a `metadata.name=X` field selector pins the list to, if any. */
export function exactName(q: Pick<ListQuery, 'fields'>): string | undefined {
  return q.fields.requirements.find((r) => r.field === 'metadata.name' && r.operator !== '!=')?.value;
}

/**
 * What a list can tell from a published row (its node and inventory entry) before building its
 * object, or undefined when the query names nothing it can: a `status.nodeName=X` field, and
 * label requirements on the labels the node itself sets on that row (user labels never override
 * them). False means the row cannot match; true means build the object and match it whole. A
 * list by node or by phase over a million sandboxes otherwise builds a million objects to keep a
 * few thousand.
 */
export function rowPrefilter(q: Pick<ListQuery, 'fields' | 'labels'>): ((node: string, entry: InventoryEntry) => boolean) | undefined {
  const node = q.fields.requirements.find((r) => r.field === 'status.nodeName' && r.operator !== '!=')?.value;
  const labels = q.labels.requirements;
  if (node === undefined && labels.length === 0) return undefined;
  return (rowNode, entry) => {
    if (node !== undefined && rowNode !== node) return false;
    if (labels.length === 0) return true;
    const own = sandboxLabelsFor(rowNode, entry);
    return labels.every((r) => !Object.hasOwn(own, r.key) || labelSelectorMatches({ requirements: [r] }, own));
  };
}

/** Whether a list or watch with this query serves the sandbox. */
export function matches(q: Selection, s: ServedSandbox): boolean {
  if (q.namespace !== '' && s.metadata.namespace !== q.namespace) return false;
  if (q.labels.requirements.length > 0 && !labelSelectorMatches(q.labels, s.metadata.labels)) return false;
  return q.fields.requirements.length === 0 || fieldSelectorMatches(q.fields, sandboxFieldSet(s));
}
