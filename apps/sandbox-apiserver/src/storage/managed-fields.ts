import { ConflictError, InvalidError, SANDBOX_API_VERSION, SANDBOX_GROUP } from '@sandbox-scale/scale-core';
import { z } from 'zod';

/**
 * Field ownership of a Sandbox, as kube-apiserver keeps it in metadata.managedFields, over the
 * only fields a Sandbox lets users set: its labels, its annotations and its spec's top-level
 * fields (each spec field owned whole, as an atomic value). Stored compactly with the user
 * metadata (one entry per manager and operation), served in kube's FieldsV1 form so kubectl,
 * Flux and Argo CD read and upgrade it as they do on any object.
 */

/** `l:<key>` a label, `a:<key>` an annotation, `s:<field>` a spec field. */
export type FieldPath = string;

export const OwnerSchema = z.object({
  manager: z.string(),
  operation: z.enum(['Apply', 'Update']),
  time: z.string(),
  fields: z.array(z.string()),
});
export type Owner = z.infer<typeof OwnerSchema>;

/** One served metadata.managedFields entry, as a client may also send it (kubectl's upgrade from client-side apply). */
const ManagedFieldsEntrySchema = z.object({
  manager: z.string().min(1).max(128),
  operation: z.enum(['Apply', 'Update']),
  apiVersion: z.string().optional(),
  time: z.string().optional(),
  fieldsType: z.literal('FieldsV1').optional(),
  fieldsV1: z.record(z.string(), z.unknown()).optional(),
  subresource: z.string().optional(),
});
export type ManagedFieldsEntry = z.infer<typeof ManagedFieldsEntrySchema>;

/** The manager kube-apiserver names for fields nobody applied before the first apply. */
export const BEFORE_FIRST_APPLY = 'before-first-apply';

const label = (k: string): FieldPath => `l:${k}`;
const annotation = (k: string): FieldPath => `a:${k}`;
const specField = (k: string): FieldPath => `s:${k}`;

/** The field paths a set of user labels, annotations and spec fields makes up. */
export function fieldsOf(
  labels: Readonly<Record<string, unknown>>,
  annotations: Readonly<Record<string, unknown>>,
  spec: Readonly<Record<string, unknown>>,
): Set<FieldPath> {
  return new Set([...Object.keys(labels).map(label), ...Object.keys(annotations).map(annotation), ...Object.keys(spec).map(specField)]);
}

/** The path as kube's conflict messages write it. */
export function showField(f: FieldPath): string {
  const rest = f.slice(2);
  if (f.startsWith('l:')) return `.metadata.labels.${rest}`;
  if (f.startsWith('a:')) return `.metadata.annotations.${rest}`;
  return `.spec.${rest}`;
}

const mark = (): Record<string, never> => ({});

/** A set of paths in FieldsV1 form (`{"f:metadata":{"f:labels":{"f:team":{}}}}`). */
function toFieldsV1(fields: readonly FieldPath[]): Record<string, unknown> {
  const labels: Record<string, unknown> = {};
  const annotations: Record<string, unknown> = {};
  const spec: Record<string, unknown> = {};
  const put = (o: Record<string, unknown>, k: string): void =>
    void Object.defineProperty(o, `f:${k}`, { value: mark(), enumerable: true, writable: true, configurable: true });
  for (const f of [...fields].sort()) {
    const k = f.slice(2);
    if (f.startsWith('l:')) put(labels, k);
    else if (f.startsWith('a:')) put(annotations, k);
    else put(spec, k);
  }
  const metadata: Record<string, unknown> = {};
  if (Object.keys(annotations).length > 0) metadata['f:annotations'] = annotations;
  if (Object.keys(labels).length > 0) metadata['f:labels'] = labels;
  const out: Record<string, unknown> = {};
  if (Object.keys(metadata).length > 0) out['f:metadata'] = metadata;
  if (Object.keys(spec).length > 0) out['f:spec'] = spec;
  return out;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The paths of a FieldsV1 set this project tracks; anything else in it (f:status, deeper spec parts) is not owned here. */
function fromFieldsV1(v: Record<string, unknown> | undefined): FieldPath[] {
  const keysOf = (o: unknown): string[] => (isRecord(o) ? Object.keys(o).flatMap((k) => (k.startsWith('f:') ? [k.slice(2)] : [])) : []);
  const md = isRecord(v?.['f:metadata']) ? v['f:metadata'] : {};
  return [...keysOf(md['f:labels']).map(label), ...keysOf(md['f:annotations']).map(annotation), ...keysOf(v?.['f:spec']).map(specField)];
}

/** metadata.managedFields as served. */
export function toManagedFields(owners: readonly Owner[]): ManagedFieldsEntry[] {
  return owners.map((o) => ({
    manager: o.manager,
    operation: o.operation,
    apiVersion: SANDBOX_API_VERSION,
    time: o.time,
    fieldsType: 'FieldsV1',
    fieldsV1: toFieldsV1(o.fields),
  }));
}

/** Owners from a metadata.managedFields a client wrote; a malformed list is a 422 naming it. */
export function ownersFromManagedFields(name: string, value: unknown, now: string): Owner[] {
  const parsed = z.array(ManagedFieldsEntrySchema).safeParse(value ?? []);
  if (!parsed.success)
    throw new InvalidError({ group: SANDBOX_GROUP, kind: 'Sandbox' }, name, [
      { reason: 'FieldValueInvalid', field: 'metadata.managedFields', message: parsed.error.issues[0]?.message ?? 'invalid' },
    ]);
  return parsed.data
    .map((e) => ({ manager: e.manager, operation: e.operation, time: e.time ?? now, fields: fromFieldsV1(e.fieldsV1) }))
    .filter((o) => o.fields.length > 0);
}

const sameOwners = (a: readonly Owner[], b: readonly Owner[]): boolean =>
  JSON.stringify(a.map((o) => [o.manager, o.operation, [...o.fields].sort()])) ===
  JSON.stringify(b.map((o) => [o.manager, o.operation, [...o.fields].sort()]));

/** Whether two ownership lists differ other than in their times. */
export function ownersChanged(a: readonly Owner[], b: readonly Owner[]): boolean {
  return !sameOwners(a, b);
}

const without = (owners: readonly Owner[], drop: ReadonlySet<FieldPath>): Owner[] =>
  owners.map((o) => ({ ...o, fields: o.fields.filter((f) => !drop.has(f)) })).filter((o) => o.fields.length > 0);

/**
 * An update (a merge, JSON or strategic patch, a create): the fields it set or changed become
 * `manager`'s (Update), taken from whoever had them; the fields it removed are nobody's.
 */
export function recordUpdate(
  owners: readonly Owner[],
  manager: string,
  changed: ReadonlySet<FieldPath>,
  removed: ReadonlySet<FieldPath>,
  now: string,
): Owner[] {
  if (changed.size === 0 && removed.size === 0) return [...owners];
  const rest = without(owners, new Set([...changed, ...removed]));
  if (changed.size === 0) return rest;
  const i = rest.findIndex((o) => o.manager === manager && o.operation === 'Update');
  const mine = i < 0 ? [] : (rest[i]?.fields ?? []);
  const entry: Owner = { manager, operation: 'Update', time: now, fields: [...new Set([...mine, ...changed])].sort() };
  return i < 0 ? [...rest, entry] : rest.map((o, j) => (j === i ? entry : o));
}

export interface ApplyPlan {
  /** Ownership once the apply is done. */
  readonly owners: Owner[];
  /** Fields `manager` stopped applying that nobody else owns: they are removed. */
  readonly removed: Set<FieldPath>;
}

/**
 * A server-side apply by `manager` of `applied` (the fields its configuration holds), where
 * `differs` says which applied fields would change a value. A changed field another manager
 * owns is a conflict (409 naming fields and managers, as kube-apiserver answers) unless `force`
 * takes it from them.
 */
export interface ApplyRequest {
  readonly name: string;
  readonly owners: readonly Owner[];
  readonly manager: string;
  /** The fields the applied configuration holds. */
  readonly applied: ReadonlySet<FieldPath>;
  /** Whether applying the field would change its value. */
  readonly differs: (f: FieldPath) => boolean;
  readonly force: boolean;
  readonly now: string;
}

export function planApply({ name, owners, manager, applied, differs, force, now }: ApplyRequest): ApplyPlan {
  const conflicts: Array<{ field: FieldPath; manager: string }> = [];
  for (const o of owners) {
    if (o.manager === manager) continue;
    for (const f of o.fields) if (applied.has(f) && differs(f)) conflicts.push({ field: f, manager: o.manager });
  }
  if (conflicts.length > 0 && !force) {
    const causes = conflicts.map((c) => ({
      reason: 'FieldManagerConflict',
      field: showField(c.field),
      message: `conflict with "${c.manager}" using ${SANDBOX_API_VERSION}`,
    }));
    const list = conflicts.map((c) => `conflict with "${c.manager}" using ${SANDBOX_API_VERSION}: ${showField(c.field)}`);
    throw new ConflictError(`Apply failed with ${conflicts.length} conflict${conflicts.length === 1 ? '' : 's'}: ${list.join('\n')}`, {
      name,
      group: SANDBOX_GROUP,
      kind: 'sandboxes',
      causes,
    });
  }
  const taken = new Set(conflicts.map((c) => c.field));
  const previous = new Set(owners.find((o) => o.manager === manager && o.operation === 'Apply')?.fields ?? []);
  const others = without(
    owners.filter((o) => !(o.manager === manager && o.operation === 'Apply')),
    taken,
  );
  const ownedByOthers = new Set(others.flatMap((o) => o.fields));
  const removed = new Set([...previous].filter((f) => !applied.has(f) && !ownedByOthers.has(f)));
  const mine: Owner = { manager, operation: 'Apply', time: now, fields: [...applied].sort() };
  const before = owners.find((o) => o.manager === manager && o.operation === 'Apply');
  const keepTime = before !== undefined && JSON.stringify([...before.fields].sort()) === JSON.stringify(mine.fields);
  const applyEntry = keepTime ? before : mine;
  // kube keeps the entries' order: an existing entry stays where it was, a new one goes last
  const ordered: Owner[] = [];
  let placed = false;
  for (const o of owners) {
    if (o.manager === manager && o.operation === 'Apply') {
      if (applyEntry.fields.length > 0) ordered.push(applyEntry);
      placed = true;
      continue;
    }
    const kept = others.find((x) => x.manager === o.manager && x.operation === o.operation);
    if (kept !== undefined) ordered.push(kept);
  }
  if (!placed && applyEntry.fields.length > 0) ordered.push(applyEntry);
  return { owners: ordered, removed };
}
