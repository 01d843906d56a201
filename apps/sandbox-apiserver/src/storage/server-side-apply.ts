import {
  BadRequestError,
  ConflictError,
  findPrototypeKey,
  InvalidError,
  isNotFoundError,
  SANDBOX_API_VERSION,
  SANDBOX_GROUP,
  type Sandbox,
  type ServedSandbox,
} from '@sandbox-scale/scale-core';
import { BEFORE_FIRST_APPLY, fieldsOf, planApply, type FieldPath, type Owner } from './managed-fields';
import { PATCH_TYPES, RESERVED_PREFIX } from './patch-sandbox';
import { commitPatch, modeOf, nowOf, userMetadataOf, type PatchContext } from './patch-storage';

/**
 * Server-side apply (`application/apply-patch+yaml`) of a Sandbox, as kube-apiserver does it on
 * the fields a Sandbox lets users set: labels, annotations and spec.operatingMode, plus the
 * create-time spec repeated unchanged. The applied configuration is the manager's intent: the
 * fields it holds become the manager's (an Apply entry of metadata.managedFields); a field it
 * changes that another manager owns is a 409 conflict naming both unless forced; a field it
 * stops applying that nobody else owns is removed (a dropped spec.operatingMode wakes the
 * sandbox, Running being the default). Applying to a name that does not exist creates it.
 */

export interface ApplyContext extends Omit<PatchContext, 'type'> {
  readonly force: boolean;
  /** Creates the Sandbox the configuration describes when the name does not exist. */
  readonly create: (body: Record<string, unknown>) => Promise<Sandbox>;
}

export interface ApplyResult {
  readonly object: ServedSandbox | Sandbox;
  readonly created: boolean;
}

type Json = Record<string, unknown>;
const isRecord = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

const strings = (name: string, field: string, v: unknown): Record<string, string> => {
  if (v === undefined || v === null) return {};
  if (!isRecord(v))
    throw new InvalidError({ group: SANDBOX_GROUP, kind: 'Sandbox' }, name, [
      { reason: 'FieldValueInvalid', field, message: 'must be a map of strings' },
    ]);
  for (const [k, val] of Object.entries(v))
    if (typeof val !== 'string')
      throw new InvalidError({ group: SANDBOX_GROUP, kind: 'Sandbox' }, name, [
        { reason: 'FieldValueInvalid', field: `${field}[${k}]`, message: 'must be a string' },
      ]);
  return v as Record<string, string>;
};

/** The applied configuration, checked as kube-apiserver checks one before it merges it. */
function configOf(c: ApplyContext): { config: Json; labels: Record<string, string>; annotations: Record<string, string>; spec: Json } {
  const config = c.patch;
  if (!isRecord(config)) throw new BadRequestError('an apply configuration is an object (a Sandbox manifest)');
  const protoKey = findPrototypeKey(config);
  if (protoKey !== undefined)
    throw new InvalidError({ group: SANDBOX_GROUP, kind: 'Sandbox' }, c.name, [
      { reason: 'FieldValueForbidden', field: protoKey, message: "it is not allowed as a key: it names an object's prototype" },
    ]);
  if (config['apiVersion'] !== SANDBOX_API_VERSION)
    throw new BadRequestError(
      `the API version in the data (${String(config['apiVersion'] ?? '')}) does not match the expected API version (${SANDBOX_API_VERSION})`,
    );
  if (config['kind'] !== 'Sandbox') throw new BadRequestError(`the kind in the data (${String(config['kind'] ?? '')}) is not Sandbox`);
  const md = isRecord(config['metadata']) ? config['metadata'] : {};
  if (md['name'] !== undefined && md['name'] !== c.name)
    throw new BadRequestError(`the name of the object (${String(md['name'])}) does not match the name on the URL (${c.name})`);
  if (md['namespace'] !== undefined && md['namespace'] !== c.namespace)
    throw new BadRequestError(
      `the namespace of the object (${String(md['namespace'])}) does not match the namespace on the request (${c.namespace})`,
    );
  if (md['managedFields'] !== undefined) throw new BadRequestError('metadata.managedFields must be nil');
  const spec = isRecord(config['spec']) ? config['spec'] : {};
  return {
    config,
    labels: strings(c.name, 'metadata.labels', md['labels']),
    annotations: strings(c.name, 'metadata.annotations', md['annotations']),
    spec,
  };
}

/** The user fields of an applied configuration (the server's reserved keys are checked, never owned). */
const ownedFieldsOf = (labels: Record<string, string>, annotations: Record<string, string>, spec: Json): Set<FieldPath> => {
  const user = (m: Record<string, string>): Record<string, string> =>
    Object.fromEntries(Object.entries(m).filter(([k]) => !k.startsWith(RESERVED_PREFIX)));
  return fieldsOf(user(labels), user(annotations), spec);
};

export async function applySandbox(c: ApplyContext): Promise<ApplyResult> {
  const { config, labels, annotations, spec } = configOf(c);
  await c.store?.refresh(c.namespace);
  let current: ServedSandbox;
  try {
    current = await c.verbs.get(c.namespace, c.name);
  } catch (err) {
    if (!isNotFoundError(err)) throw err;
    const md = isRecord(config['metadata']) ? config['metadata'] : {};
    const body = { ...config, metadata: { ...md, name: c.name, namespace: c.namespace } };
    return { object: await c.create(body), created: true };
  }
  const md = isRecord(config['metadata']) ? config['metadata'] : {};
  if (md['resourceVersion'] !== undefined && md['resourceVersion'] !== current.metadata.resourceVersion)
    throw new ConflictError(
      `Operation cannot be fulfilled on sandboxes.${SANDBOX_GROUP} "${c.name}": the object has been modified; please apply your changes to the latest version and try again`,
      { name: c.name, group: SANDBOX_GROUP, kind: 'sandboxes' },
    );
  const now = nowOf(c);
  const user = userMetadataOf(current);
  const applied = ownedFieldsOf(labels, annotations, spec);
  const differs = (f: FieldPath): boolean => {
    const k = f.slice(2);
    if (f.startsWith('l:')) return user.labels[k] !== labels[k];
    if (f.startsWith('a:')) return user.annotations[k] !== annotations[k];
    // the create-time spec cannot change (checked on its own): only the mode can differ
    return k === 'operatingMode' && (spec['operatingMode'] ?? 'Running') !== modeOf(current);
  };
  const mode = modeOf(current);
  const unowned = (entryOwners: readonly Owner[]): Owner[] => {
    if (entryOwners.length > 0) return [...entryOwners];
    // fields set before anyone tracked ownership are kube's "before-first-apply" manager's
    const existing = [...fieldsOf(user.labels, user.annotations, mode === 'Suspended' ? { operatingMode: mode } : {})].sort();
    return existing.length > 0 ? [{ manager: BEFORE_FIRST_APPLY, operation: 'Update', time: now, fields: existing }] : [];
  };
  const entry = c.store?.get(c.namespace, c.name);
  const plan = planApply({
    name: c.name,
    owners: unowned(entry !== undefined && entry.uid === current.metadata.uid ? (entry.owners ?? []) : []),
    manager: c.manager,
    applied,
    differs,
    force: c.force,
    now,
  });
  // the merge patch the apply amounts to: the applied values, and nulls for the fields dropped
  const nulls = (prefix: string): Record<string, null> =>
    Object.fromEntries([...plan.removed].filter((f) => f.startsWith(prefix)).map((f) => [f.slice(2), null]));
  const specPatch: Json = { ...spec };
  if (plan.removed.has('s:operatingMode') && spec['operatingMode'] === undefined) specPatch['operatingMode'] = 'Running';
  const patch = {
    metadata: { labels: { ...nulls('l:'), ...labels }, annotations: { ...nulls('a:'), ...annotations } },
    spec: specPatch,
  };
  const object = await commitPatch({ ...c, type: PATCH_TYPES.merge }, current, PATCH_TYPES.merge, patch, () => plan.owners);
  return { object, created: false };
}
