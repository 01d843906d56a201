import type { IncomingMessage } from 'node:http';
import { readBounded } from '@sandbox-scale/kube-runtime';
import { BadRequestError, CONDITION_TYPES, SANDBOX_PHASES, StatusError, type ServedSandbox } from '@sandbox-scale/scale-core';
import type { SandboxVerbs } from '../peers/sandbox-verbs';
import { applySandboxPatch, patchTypeOf, RESERVED_PREFIX, type UserMetadata } from '../storage/patch-sandbox';
import type { SandboxView } from '../storage/sandbox-view';
import { decorate, MetadataTooLargeError, type UserMetadataStore } from '../storage/user-metadata';

const MAX_PATCH_BYTES = 1024 * 1024;

async function readPatch(req: IncomingMessage): Promise<unknown> {
  const body = await readBounded(req, MAX_PATCH_BYTES);
  if (body === undefined) throw new StatusError('BadRequest', `request body larger than ${MAX_PATCH_BYTES} bytes`);
  const text = body.toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new BadRequestError(`invalid JSON patch body: ${(err as Error).message}`, { cause: err });
  }
}

const modeOf = (s: ServedSandbox): 'Running' | 'Suspended' =>
  s.status.conditions.some((c) => c.type === CONDITION_TYPES.ready && c.reason === SANDBOX_PHASES.hibernated) ? 'Suspended' : 'Running';

const serverOnly = (m: Readonly<Record<string, string>> | undefined): Record<string, string> => Object.fromEntries(Object.entries(m ?? {}).filter(([k]) => k.startsWith(RESERVED_PREFIX)));

/** The object as it is served once `md` is its user metadata. */
function withMetadata(s: ServedSandbox, md: UserMetadata): ServedSandbox {
  const annotations = serverOnly(s.metadata.annotations);
  const base: ServedSandbox = { ...s, metadata: { ...s.metadata, labels: serverOnly(s.metadata.labels), ...(Object.keys(annotations).length > 0 ? { annotations } : {}) } };
  if (Object.keys(annotations).length === 0) delete (base.metadata as { annotations?: unknown }).annotations;
  return decorate(base, { uid: s.metadata.uid, labels: { ...md.labels }, annotations: { ...md.annotations } });
}

function sameMetadata(s: ServedSandbox, md: UserMetadata): boolean {
  const cur = withMetadata(s, md);
  return JSON.stringify(cur.metadata.labels) === JSON.stringify(s.metadata.labels) && JSON.stringify(cur.metadata.annotations ?? {}) === JSON.stringify(s.metadata.annotations ?? {});
}

/** Entries of the namespace whose sandbox is gone (or is another one now): dropped with the next write. */
function staleNames(view: SandboxView, store: UserMetadataStore, namespace: string, names: readonly string[]): string[] {
  if (!view.live) return [];
  return names.filter((n) => {
    const row = view.get(namespace, n);
    return row === undefined || view.objectOf(row).metadata.uid !== store.get(namespace, n)?.uid;
  });
}

export interface PatchContext {
  readonly req: IncomingMessage;
  readonly namespace: string;
  readonly name: string;
  readonly dryRun: boolean;
  readonly verbs: SandboxVerbs;
  readonly view: SandboxView;
  readonly store: UserMetadataStore | undefined;
}

/**
 * PATCH of a Sandbox: kubectl label, annotate and patch (merge, JSON and strategic merge patches)
 * on metadata.labels and metadata.annotations, kept in the user metadata store; and
 * spec.operatingMode (agent-sandbox's suspension) as pause (Suspended) or resume (Running).
 */
export async function patchSandbox(c: PatchContext): Promise<ServedSandbox> {
  const type = patchTypeOf(c.req.headers['content-type']);
  const patch = await readPatch(c.req);
  const current = await c.verbs.get(c.namespace, c.name);
  const outcome = applySandboxPatch(current, type, patch);
  const metadataChanges = !sameMetadata(current, outcome.metadata);
  if (metadataChanges && c.store === undefined) throw new StatusError('ServiceUnavailable', 'labels and annotations of sandboxes cannot be stored: sandbox-apiserver runs without its metadata store');
  if (c.dryRun) return withMetadata(current, outcome.metadata);
  if (outcome.operatingMode !== undefined && outcome.operatingMode !== modeOf(current)) {
    await c.verbs.act(c.namespace, c.name, outcome.operatingMode === 'Suspended' ? 'pause' : 'resume', {}, false);
  }
  if (metadataChanges && c.store !== undefined) {
    try {
      await c.store.set(c.namespace, c.name, current.metadata.uid, outcome.metadata, staleNames(c.view, c.store, c.namespace, c.store.names(c.namespace)));
    } catch (err) {
      if (err instanceof MetadataTooLargeError) throw new StatusError('Invalid', `Sandbox "${c.name}" is invalid: metadata: ${err.message}`, { name: c.name, kind: 'Sandbox', causes: [{ reason: 'FieldValueTooLong', field: 'metadata', message: err.message }] }, { cause: err });
      throw err;
    }
  }
  const row = c.view.get(c.namespace, c.name);
  if (row !== undefined) {
    const served = c.view.objectOf(row);
    if (served.metadata.uid === current.metadata.uid) return outcome.operatingMode === undefined ? served : await c.verbs.get(c.namespace, c.name);
  }
  return withMetadata(current, outcome.metadata);
}

/** Labels and annotations a create request gives, without the server's own keys; undefined when there are none. */
export function userMetadataOfCreate(body: unknown): UserMetadata | undefined {
  const meta = (body as { metadata?: { labels?: unknown; annotations?: unknown } } | undefined)?.metadata;
  const pick = (m: unknown): Record<string, string> => (typeof m === 'object' && m !== null ? Object.fromEntries(Object.entries(m).filter(([k, v]) => typeof v === 'string' && !k.startsWith(RESERVED_PREFIX))) : {}) as Record<string, string>;
  const md = { labels: pick(meta?.labels), annotations: pick(meta?.annotations) };
  return Object.keys(md.labels).length > 0 || Object.keys(md.annotations).length > 0 ? md : undefined;
}
