import { CONDITION_TYPES, SANDBOX_PHASES, StatusError, type ServedSandbox } from '@sandbox-scale/scale-core';
import { applySandboxPatch, RESERVED_PREFIX, type PatchType, type UserMetadata } from './patch-sandbox';
import type { SandboxCache } from './sandbox-cache';
import { decorate, MetadataTooLargeError, type UserMetadataStore } from './user-metadata';

const modeOf = (s: ServedSandbox): 'Running' | 'Suspended' =>
  s.status.conditions.some((c) => c.type === CONDITION_TYPES.ready && c.reason === SANDBOX_PHASES.hibernated) ? 'Suspended' : 'Running';

const serverOnly = (m: Readonly<Record<string, string>> | undefined): Record<string, string> =>
  Object.fromEntries(Object.entries(m ?? {}).filter(([k]) => k.startsWith(RESERVED_PREFIX)));

/** The object as it is served once `md` is its user metadata. */
function withMetadata(s: ServedSandbox, md: UserMetadata): ServedSandbox {
  const annotations = serverOnly(s.metadata.annotations);
  const base: ServedSandbox = {
    ...s,
    metadata: { ...s.metadata, labels: serverOnly(s.metadata.labels), ...(Object.keys(annotations).length > 0 ? { annotations } : {}) },
  };
  if (Object.keys(annotations).length === 0) delete (base.metadata as { annotations?: unknown }).annotations;
  return decorate(base, { uid: s.metadata.uid, labels: { ...md.labels }, annotations: { ...md.annotations } });
}

function sameMetadata(s: ServedSandbox, md: UserMetadata): boolean {
  const cur = withMetadata(s, md);
  return (
    JSON.stringify(cur.metadata.labels) === JSON.stringify(s.metadata.labels) &&
    JSON.stringify(cur.metadata.annotations ?? {}) === JSON.stringify(s.metadata.annotations ?? {})
  );
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
}

export interface PatchContext {
  readonly namespace: string;
  readonly name: string;
  readonly type: PatchType;
  /** The patch document; undefined when the request had no body (a 400). */
  readonly patch: unknown;
  readonly dryRun: boolean;
  readonly verbs: PatchVerbs;
  readonly cache: SandboxCache;
  readonly store: UserMetadataStore | undefined;
}

/**
 * PATCH of a Sandbox: kubectl label, annotate and patch (merge, JSON and strategic merge patches)
 * on metadata.labels and metadata.annotations, kept in the user metadata store; and
 * spec.operatingMode (agent-sandbox's suspension) as pause (Suspended) or resume (Running).
 */
export async function patchSandbox(c: PatchContext): Promise<ServedSandbox> {
  const current = await c.verbs.get(c.namespace, c.name);
  const outcome = applySandboxPatch(current, c.type, c.patch);
  const metadataChanges = !sameMetadata(current, outcome.metadata);
  if (metadataChanges && c.store === undefined)
    throw new StatusError(
      'ServiceUnavailable',
      'labels and annotations of sandboxes cannot be stored: sandbox-apiserver runs without its metadata store',
    );
  if (c.dryRun) return withMetadata(current, outcome.metadata);
  if (outcome.operatingMode !== undefined && outcome.operatingMode !== modeOf(current)) {
    await c.verbs.act(c.namespace, c.name, outcome.operatingMode === 'Suspended' ? 'pause' : 'resume', {}, false);
  }
  if (metadataChanges && c.store !== undefined) {
    try {
      await c.store.set(
        c.namespace,
        c.name,
        current.metadata.uid,
        outcome.metadata,
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
  return withMetadata(current, outcome.metadata);
}

/** Labels and annotations a create request gives, without the server's own keys; undefined when there are none. */
export function userMetadataOfCreate(body: unknown): UserMetadata | undefined {
  const meta = (body as { metadata?: { labels?: unknown; annotations?: unknown } } | undefined)?.metadata;
  const pick = (m: unknown): Record<string, string> =>
    (typeof m === 'object' && m !== null
      ? Object.fromEntries(Object.entries(m).filter(([k, v]) => typeof v === 'string' && !k.startsWith(RESERVED_PREFIX)))
      : {}) as Record<string, string>;
  const md = { labels: pick(meta?.labels), annotations: pick(meta?.annotations) };
  return Object.keys(md.labels).length > 0 || Object.keys(md.annotations).length > 0 ? md : undefined;
}
