import { z } from 'zod';

/**
 * The metadata every runtime piece reads (keys, uid, resourceVersion, owners). Lenient on
 * purpose: it must read objects that the typed parser rejects, to log and index them.
 */
export const OwnerReferenceSchema = z.object({
  apiVersion: z.string(),
  kind: z.string(),
  name: z.string(),
  uid: z.string(),
  controller: z.boolean().optional(),
});

export const ObjectMetaSchema = z.looseObject({
  name: z.string().optional(),
  namespace: z.string().optional(),
  uid: z.string().optional(),
  resourceVersion: z.string().optional(),
  generation: z.number().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
  ownerReferences: z.array(OwnerReferenceSchema).optional(),
  deletionTimestamp: z.string().optional(),
});

export type ObjectMeta = z.infer<typeof ObjectMetaSchema>;
export type OwnerReference = z.infer<typeof OwnerReferenceSchema>;

/** The structural minimum of an object the informer can cache: typed parsers produce supersets. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    labels?: Record<string, string>;
    ownerReferences?: ReadonlyArray<{ apiVersion: string; kind: string; name: string; uid: string; controller?: boolean }>;
  };
}

/** An untyped object with valid metadata: the parser to use when no typed schema exists. */
export const KubeObjectSchema = z.looseObject({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: ObjectMetaSchema,
});

export type UntypedObject = z.infer<typeof KubeObjectSchema>;

export function parseUntyped(obj: unknown): UntypedObject {
  return KubeObjectSchema.parse(obj);
}

/** Reads metadata from anything shaped like an object; never throws. */
export function metaOf(obj: unknown): ObjectMeta {
  if (typeof obj !== 'object' || obj === null) return {};
  const parsed = ObjectMetaSchema.safeParse((obj as { metadata?: unknown }).metadata);
  return parsed.success ? parsed.data : {};
}

/** What an informer needs of every watch event's object: its key and version. */
export interface KeyFields {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/**
 * The key fields of an object's metadata, each only when it is a string; never throws. Read
 * directly rather than through ObjectMetaSchema: an informer reads them once per watch event,
 * and the schema copies the whole metadata (managedFields included) to answer four strings.
 * Whether the rest is well formed is the typed parser's to judge.
 */
export function keyFieldsOf(obj: unknown): KeyFields {
  const m = typeof obj === 'object' && obj !== null ? (obj as { metadata?: unknown }).metadata : undefined;
  if (typeof m !== 'object' || m === null) return {};
  const r = m as Record<string, unknown>;
  return { name: str(r.name), namespace: str(r.namespace), uid: str(r.uid), resourceVersion: str(r.resourceVersion) };
}

/**
 * The object without metadata.managedFields (a shallow copy; the rest shared), for a cache that
 * never reads them: they are most of a small object's metadata, and a cache of many objects
 * parses, freezes and holds them for nothing (client-go's informers offer the same transform).
 * A write built from a cached object leaves the server's managedFields as they are.
 */
export function withoutManagedFields(obj: unknown): unknown {
  if (typeof obj !== 'object' || obj === null) return obj;
  const meta = (obj as { metadata?: unknown }).metadata;
  if (typeof meta !== 'object' || meta === null || !('managedFields' in meta)) return obj;
  const { managedFields: _dropped, ...rest } = meta as Record<string, unknown>;
  return { ...obj, metadata: rest };
}

export function objectKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}
