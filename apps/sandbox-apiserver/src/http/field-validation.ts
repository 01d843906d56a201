import { BadRequestError, SandboxSchema, toStructuralSchema } from '@sandbox-scale/scale-core';
import type { z } from 'zod';

/** `fieldValidation` on create: what to do with fields the schema lacks. */
export type FieldValidation = 'Ignore' | 'Warn' | 'Strict';

export function fieldValidationOf(v: string | null): FieldValidation {
  // kube-apiserver's default when absent is Warn
  if (v === null || v === '') return 'Warn';
  if (v === 'Ignore' || v === 'Warn' || v === 'Strict') return v;
  throw new BadRequestError(`fieldValidation must be one of Ignore, Warn or Strict, got ${JSON.stringify(v)}`);
}

interface Structural {
  readonly type?: string;
  readonly properties?: Record<string, Structural>;
  readonly additionalProperties?: Structural | boolean;
  readonly items?: Structural;
  readonly 'x-kubernetes-preserve-unknown-fields'?: boolean;
}

/** ObjectMeta's fields: an object schema leaves metadata open, kube checks it field by field. */
const OBJECT_META: Structural = {
  type: 'object',
  properties: Object.fromEntries(
    [
      'name',
      'generateName',
      'namespace',
      'selfLink',
      'uid',
      'resourceVersion',
      'generation',
      'creationTimestamp',
      'deletionTimestamp',
      'deletionGracePeriodSeconds',
      'finalizers',
      'ownerReferences',
      'managedFields',
    ].map((k) => [k, {}]),
  ),
};
const STRING_MAP: Structural = { type: 'object', additionalProperties: { type: 'string' } };

const structurals = new WeakMap<z.ZodType, Structural>();

/** The structural schema a body is checked against: the object's schema with ObjectMeta spelled out. */
function structuralOf(schema: z.ZodType): Structural {
  let out = structurals.get(schema);
  if (out === undefined) {
    const s = toStructuralSchema(schema) as Structural;
    const metadata: Structural = { ...OBJECT_META, properties: { ...OBJECT_META.properties, labels: STRING_MAP, annotations: STRING_MAP } };
    out = { ...s, properties: { ...s.properties, metadata } };
    structurals.set(schema, out);
  }
  return out;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function walk(value: unknown, schema: Structural, path: string, out: string[]): void {
  if (Array.isArray(value)) {
    if (schema.items !== undefined) value.forEach((v, i) => walk(v, schema.items as Structural, `${path}[${i}]`, out));
    return;
  }
  if (!isRecord(value)) return;
  const props = schema.properties;
  const extra = typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined;
  // an object with no declared fields (or additionalProperties: true) is opaque: anything goes
  const open =
    schema['x-kubernetes-preserve-unknown-fields'] === true ||
    schema.additionalProperties === true ||
    (props === undefined && extra === undefined);
  for (const [k, v] of Object.entries(value)) {
    const at = path === '' ? k : `${path}.${k}`;
    const known = props?.[k] ?? extra;
    if (known !== undefined) walk(v, known, at, out);
    else if (!open) out.push(at);
  }
}

/** Dotted paths, sorted, of every field of a body that `schema` does not declare. */
export function unknownFields(body: unknown, schema: z.ZodType): string[] {
  const out: string[] = [];
  walk(body, structuralOf(schema), '', out);
  return out.sort();
}

export const unknownSandboxFields = (body: unknown): string[] => unknownFields(body, SandboxSchema);

/**
 * Applies `fieldValidation` to a create body of `schema`'s objects: Strict → 400 naming every unknown field (as
 * kube's strict decoder words it); Warn → the `Warning` header values to send; Ignore → none.
 * Unknown fields are never stored either way: the served object is rebuilt from the node.
 */
export function checkUnknownFields(body: unknown, mode: FieldValidation, schema: z.ZodType = SandboxSchema): string[] {
  if (mode === 'Ignore') return [];
  const unknown = unknownFields(body, schema);
  if (unknown.length === 0) return [];
  if (mode === 'Strict') throw new BadRequestError(`strict decoding error: ${unknown.map((f) => `unknown field "${f}"`).join(', ')}`);
  return unknown.map((f) => `299 - ${JSON.stringify(`unknown field "${f}"`)}`);
}
