import {
  ANNOTATIONS,
  CONDITION_TYPES,
  InvalidError,
  PodTemplateSchema,
  poolKeyFor,
  poolKeyId,
  refusedSandboxFields,
  SANDBOX_GROUP,
  SANDBOX_PHASES,
  StatusError,
  type PoolKeyLike,
  type ServedSandbox,
} from '@sandbox-scale/scale-core';
import { fieldsOf, ownersChanged, ownersFromManagedFields, recordUpdate, type FieldPath, type Owner } from './managed-fields';
import {
  applySandboxPatch,
  CREATE_TIME_ANNOTATIONS,
  RESERVED_PREFIX,
  type PatchOutcome,
  type PatchType,
  type UserMetadata,
} from './patch-sandbox';
import type { SandboxCache } from './sandbox-cache';
import {
  decorate,
  MetadataTooLargeError,
  type CreateAsks,
  type MetadataEntry,
  type StoredMetadata,
  type UserMetadataStore,
} from './user-metadata';

export const modeOf = (s: ServedSandbox): 'Running' | 'Suspended' =>
  s.status.conditions.some((c) => c.type === CONDITION_TYPES.ready && c.reason === SANDBOX_PHASES.hibernated) ? 'Suspended' : 'Running';

const serverOnly = (m: Readonly<Record<string, string>> | undefined): Record<string, string> =>
  Object.fromEntries(Object.entries(m ?? {}).filter(([k]) => k.startsWith(RESERVED_PREFIX)));

const userOnly = (m: Readonly<Record<string, string>> | undefined): Record<string, string> =>
  Object.fromEntries(Object.entries(m ?? {}).filter(([k]) => !k.startsWith(RESERVED_PREFIX)));

/** The labels and annotations users gave a served Sandbox (the server's own keys left out). */
export const userMetadataOf = (s: ServedSandbox): UserMetadata => ({
  labels: userOnly(s.metadata.labels),
  annotations: userOnly(s.metadata.annotations),
});

/** The object as it is served once `md` is its user metadata and `owners` its field ownership. */
function withMetadata(s: ServedSandbox, md: UserMetadata, owners: readonly Owner[]): ServedSandbox {
  const annotations = serverOnly(s.metadata.annotations);
  const metadata: Record<string, unknown> = { ...s.metadata, labels: serverOnly(s.metadata.labels), annotations };
  if (Object.keys(annotations).length === 0) delete metadata['annotations'];
  delete metadata['managedFields'];
  const base = { ...s, metadata } as ServedSandbox;
  return decorate(base, { uid: s.metadata.uid, labels: { ...md.labels }, annotations: { ...md.annotations }, owners: [...owners] });
}

function sameMetadata(s: ServedSandbox, md: UserMetadata): boolean {
  const cur = userMetadataOf(s);
  const sorted = (m: Readonly<Record<string, string>>): string => JSON.stringify(Object.entries(m).sort());
  return sorted(cur.labels) === sorted(md.labels) && sorted(cur.annotations) === sorted(md.annotations);
}

/** Entries of the namespace whose sandbox is gone (or is another one now): dropped with the next write. */
function staleNames(cache: SandboxCache, store: UserMetadataStore, namespace: string, names: readonly string[]): string[] {
  if (!cache.live) return [];
  return names.filter((n) => {
    const row = cache.get(namespace, n);
    return row === undefined || cache.objectOf(row).metadata.uid !== store.get(namespace, n)?.uid;
  });
}

/** The verbs a patch reads and acts through: the replica that owns the name answers them. */
export interface PatchVerbs {
  get(namespace: string, name: string): Promise<ServedSandbox>;
  act(namespace: string, name: string, action: string, body: unknown, dryRun: boolean): Promise<Record<string, unknown> | ServedSandbox>;
  /** The pool key the sandbox's node claimed it from (what a repeated spec.podTemplate must still name). */
  poolKeyOf(namespace: string, name: string): Promise<PoolKeyLike>;
}

export interface PatchContext {
  readonly namespace: string;
  readonly name: string;
  readonly type: PatchType;
  /** The patch document; undefined when the request had no body (a 400). */
  readonly patch: unknown;
  readonly dryRun: boolean;
  /** Who makes the change (fieldManager, else the client's user agent): it owns the fields it sets. */
  readonly manager: string;
  readonly verbs: PatchVerbs;
  readonly cache: SandboxCache;
  readonly store: UserMetadataStore | undefined;
  readonly now?: () => Date;
}

const invalid = (name: string, field: string, message: string): InvalidError =>
  new InvalidError({ group: SANDBOX_GROUP, kind: 'Sandbox' }, name, [{ reason: 'FieldValueForbidden', field, message }]);

const CREATE_TIME =
  'it is set when the Sandbox is created and cannot be changed; re-applying the manifest it was created from is accepted, and a different one needs a new Sandbox';

/**
 * The create-time fields a patch repeats (kubectl apply sends the whole manifest again, since
 * the served spec is empty) are accepted when they ask for what the sandbox already is: the same
 * pool key for spec.podTemplate (its image, size and network lane), the same shutdownTime and
 * reserved annotations as the create, and values a create accepts for the rest.
 */
async function checkCreateTimeFields(c: PatchContext, outcome: PatchOutcome, asks: CreateAsks | undefined): Promise<void> {
  const spec = outcome.createTimeSpec;
  const [refused] = refusedSandboxFields({ spec });
  if (refused !== undefined) throw invalid(c.name, refused.field, `Forbidden: ${refused.message}`);
  for (const [k, v] of Object.entries(outcome.createTimeAnnotations))
    if (asks?.annotations[k] !== v && !(k === ANNOTATIONS.net && spec['podTemplate'] !== undefined))
      throw invalid(c.name, `metadata.annotations[${k}]`, CREATE_TIME);
  const shutdown = spec['shutdownTime'];
  if (shutdown !== undefined && shutdown !== null) {
    const same = typeof shutdown === 'string' && asks?.shutdownTime !== undefined && Date.parse(shutdown) === Date.parse(asks.shutdownTime);
    if (!same) throw invalid(c.name, 'spec.shutdownTime', CREATE_TIME);
  }
  const template = spec['podTemplate'];
  if (template === undefined || template === null) return;
  const parsed = PodTemplateSchema.safeParse(template);
  if (!parsed.success) throw invalid(c.name, 'spec.podTemplate', parsed.error.issues[0]?.message ?? 'invalid pod template');
  const net = outcome.createTimeAnnotations[ANNOTATIONS.net] ?? asks?.annotations[ANNOTATIONS.net];
  const asked = poolKeyFor(parsed.data.spec.containers, net);
  const actual = await c.verbs.poolKeyOf(c.namespace, c.name);
  if (poolKeyId(asked) !== poolKeyId(actual))
    throw invalid(
      c.name,
      'spec.podTemplate',
      `asks for pool key ${asked.template}/${asked.net}/${asked.size} but the sandbox was created from ${actual.template}/${actual.net ?? 'none'}/${actual.size ?? 'small'}: ${CREATE_TIME}`,
    );
}

/** The user fields (labels, annotations, operating mode) a change sets and removes. */
function changesOf(current: ServedSandbox, outcome: PatchOutcome): { changed: Set<FieldPath>; removed: Set<FieldPath> } {
  const cur = userMetadataOf(current);
  const changed = new Set<FieldPath>();
  const removed = new Set<FieldPath>();
  const diff = (prefix: 'l:' | 'a:', a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): void => {
    for (const [k, v] of Object.entries(b)) if (a[k] !== v) changed.add(`${prefix}${k}`);
    for (const k of Object.keys(a)) if (!Object.hasOwn(b, k)) removed.add(`${prefix}${k}`);
  };
  diff('l:', cur.labels, outcome.metadata.labels);
  diff('a:', cur.annotations, outcome.metadata.annotations);
  if (outcome.operatingMode !== undefined && outcome.operatingMode !== modeOf(current)) changed.add('s:operatingMode');
  return { changed, removed };
}

/** How a change decides field ownership once it is known to be valid. */
export type OwnersOf = (current: ServedSandbox, outcome: PatchOutcome, entry: MetadataEntry | undefined) => Owner[];

/** The entry of `current` in the store, when it is this sandbox's (not one of the same name before it). */
export function entryOf(store: UserMetadataStore | undefined, current: ServedSandbox): MetadataEntry | undefined {
  const e = store?.get(current.metadata.namespace, current.metadata.name);
  return e !== undefined && e.uid === current.metadata.uid ? e : undefined;
}

/**
 * A change of a served Sandbox, whatever asked for it (a patch, a server-side apply): validated,
 * then its operating mode acted on, then its user metadata and ownership written when they change.
 */
export async function commitPatch(
  c: PatchContext,
  current: ServedSandbox,
  type: PatchType,
  patch: unknown,
  ownersOf: OwnersOf,
): Promise<ServedSandbox> {
  const entry = entryOf(c.store, current);
  const outcome = applySandboxPatch(current, type, patch);
  await checkCreateTimeFields(c, outcome, entry?.created);
  const metadataChanges = !sameMetadata(current, outcome.metadata);
  if (metadataChanges && c.store === undefined)
    throw new StatusError(
      'ServiceUnavailable',
      'labels and annotations of sandboxes cannot be stored: sandbox-apiserver runs without its metadata store',
    );
  // without a store nothing of ownership can be kept either: the mode alone still changes
  const owners = c.store === undefined ? [] : ownersOf(current, outcome, entry);
  const ownershipChanges = ownersChanged(entry?.owners ?? [], owners);
  const stored: StoredMetadata = { ...outcome.metadata, owners, ...(entry?.created ? { created: entry.created } : {}) };
  if (c.dryRun) return withMetadata(current, outcome.metadata, owners);
  if (outcome.operatingMode !== undefined && outcome.operatingMode !== modeOf(current)) {
    await c.verbs.act(c.namespace, c.name, outcome.operatingMode === 'Suspended' ? 'pause' : 'resume', {}, false);
  }
  if ((metadataChanges || ownershipChanges) && c.store !== undefined) {
    try {
      await c.store.set(
        c.namespace,
        c.name,
        current.metadata.uid,
        stored,
        staleNames(c.cache, c.store, c.namespace, c.store.names(c.namespace)),
      );
    } catch (err) {
      if (err instanceof MetadataTooLargeError)
        throw new StatusError(
          'Invalid',
          `Sandbox "${c.name}" is invalid: metadata: ${err.message}`,
          { name: c.name, kind: 'Sandbox', causes: [{ reason: 'FieldValueTooLong', field: 'metadata', message: err.message }] },
          { cause: err },
        );
      throw err;
    }
  }
  const row = c.cache.get(c.namespace, c.name);
  if (row !== undefined) {
    const served = c.cache.objectOf(row);
    if (served.metadata.uid === current.metadata.uid)
      return outcome.operatingMode === undefined ? served : await c.verbs.get(c.namespace, c.name);
  }
  return withMetadata(current, outcome.metadata, owners);
}

/** Now as managedFields times are written (RFC 3339, seconds). */
export const nowOf = (c: Pick<PatchContext, 'now'>): string => (c.now?.() ?? new Date()).toISOString().replace(/\.\d{3}Z$/, 'Z');

/**
 * PATCH of a Sandbox: kubectl label, annotate, patch and client-side apply (merge, JSON and
 * strategic merge patches) on metadata.labels and metadata.annotations, kept in the user
 * metadata store; spec.operatingMode (agent-sandbox's suspension) as pause (Suspended) or resume
 * (Running); the create-time spec repeated unchanged. The fields it changes become the
 * manager's (an Update in metadata.managedFields); a patch that rewrites metadata.managedFields
 * (kubectl's upgrade to server-side apply) sets them as given.
 */
export async function patchSandbox(c: PatchContext): Promise<ServedSandbox> {
  await c.store?.refresh(c.namespace);
  const current = await c.verbs.get(c.namespace, c.name);
  return commitPatch(c, current, c.type, c.patch, (cur, outcome, entry) => {
    if (outcome.managedFields !== undefined) return ownersFromManagedFields(c.name, outcome.managedFields, nowOf(c));
    const { changed, removed } = changesOf(cur, outcome);
    return recordUpdate(entry?.owners ?? [], c.manager, changed, removed, nowOf(c));
  });
}

/**
 * What a create keeps beside the node's record: its labels and annotations (without the
 * server's own keys), what it asked that the served object does not show (shutdownTime, the
 * reserved network and TTL annotations), and, once either is kept, who set which fields.
 * Undefined when there is nothing to keep, so a bare create writes nothing more.
 */
export function metadataOfCreate(body: unknown, manager: string, operation: Owner['operation'], now: string): StoredMetadata | undefined {
  const b = (typeof body === 'object' && body !== null ? body : {}) as {
    metadata?: { labels?: unknown; annotations?: unknown };
    spec?: unknown;
  };
  const strings = (m: unknown): Record<string, string> =>
    (typeof m === 'object' && m !== null ? Object.fromEntries(Object.entries(m).filter(([, v]) => typeof v === 'string')) : {}) as Record<
      string,
      string
    >;
  const labels = userOnly(strings(b.metadata?.labels));
  const allAnnotations = strings(b.metadata?.annotations);
  const annotations = userOnly(allAnnotations);
  const spec = (typeof b.spec === 'object' && b.spec !== null ? b.spec : {}) as Record<string, unknown>;
  const askedAnnotations = Object.fromEntries(Object.entries(allAnnotations).filter(([k]) => CREATE_TIME_ANNOTATIONS.includes(k)));
  const shutdownTime = typeof spec['shutdownTime'] === 'string' && spec['shutdownTime'] !== '' ? spec['shutdownTime'] : undefined;
  const created: CreateAsks | undefined =
    shutdownTime !== undefined || Object.keys(askedAnnotations).length > 0
      ? { ...(shutdownTime !== undefined ? { shutdownTime } : {}), annotations: askedAnnotations }
      : undefined;
  const keeps = Object.keys(labels).length > 0 || Object.keys(annotations).length > 0 || created !== undefined || operation === 'Apply';
  if (!keeps) return undefined;
  const fields = [...fieldsOf(labels, annotations, spec)];
  const owners: Owner[] = fields.length > 0 ? [{ manager, operation, time: now, fields: fields.sort() }] : [];
  return { labels, annotations, owners, ...(created !== undefined ? { created } : {}) };
}
