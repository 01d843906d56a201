import { z } from 'zod';
import { SandboxScaleError } from '../errors/base';

/** A JSON-schema node as it is being rewritten into an apiextensions v1 structural schema. */
export type SchemaNode = { [key: string]: unknown };

/** A zod construct the converter cannot express as a structural schema (e.g. a plain union). */
export class UnstructuralSchemaError extends SandboxScaleError {
  constructor(path: string, why: string) {
    super(`schema at ${path === '' ? '<root>' : path} is not structural: ${why}`);
  }
}

const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;

const isNode = (v: unknown): v is SchemaNode => v !== null && typeof v === 'object' && !Array.isArray(v);

function intOrString(node: SchemaNode): SchemaNode {
  const out: SchemaNode = {};
  if (typeof node['description'] === 'string') out['description'] = node['description'];
  out['anyOf'] = [{ type: 'integer' }, { type: 'string' }];
  if (typeof node['pattern'] === 'string') out['pattern'] = node['pattern'];
  out['x-kubernetes-int-or-string'] = true;
  return out;
}

/** zod bounds every int32/int by its range; Kubernetes says the same with `format`. */
function fixInteger(node: SchemaNode): void {
  if (node['maximum'] === INT32_MAX) {
    delete node['maximum'];
    node['format'] = 'int32';
    if (node['minimum'] === INT32_MIN) delete node['minimum'];
  } else if (node['maximum'] === Number.MAX_SAFE_INTEGER) {
    delete node['maximum'];
    node['format'] = 'int64';
    if (node['minimum'] === Number.MIN_SAFE_INTEGER) delete node['minimum'];
  }
}

function fixObject(node: SchemaNode, path: string): void {
  const props = node['properties'];
  if (isNode(props) && Object.keys(props).length === 0) delete node['properties'];
  const ap = node['additionalProperties'];
  // Loose objects say `additionalProperties: {}`; a CRD keeps unknown fields only where
  // x-kubernetes-preserve-unknown-fields says so, and prunes everywhere else.
  if (node['properties'] !== undefined || !isNode(ap) || Object.keys(ap).length === 0) delete node['additionalProperties'];
  if (isNode(node['properties'])) {
    for (const [k, v] of Object.entries(node['properties'])) (node['properties'] as SchemaNode)[k] = convert(v, `${path}.${k}`);
  }
  if (isNode(node['additionalProperties'])) node['additionalProperties'] = convert(node['additionalProperties'], `${path}[*]`);
}

function convert(raw: unknown, path: string): SchemaNode {
  if (!isNode(raw)) throw new UnstructuralSchemaError(path, 'expected a schema object');
  if (raw['x-kubernetes-int-or-string'] === true) return intOrString(raw);
  const node: SchemaNode = { ...raw };
  for (const junctor of ['anyOf', 'oneOf', 'allOf', 'not', '$ref']) {
    if (junctor in node) throw new UnstructuralSchemaError(path, `${junctor} is not supported; model it as one type`);
  }
  if (typeof node['type'] !== 'string' && node['x-kubernetes-preserve-unknown-fields'] !== true) {
    throw new UnstructuralSchemaError(path, 'every node needs a type');
  }
  switch (node['type']) {
    case 'object':
      fixObject(node, path);
      break;
    case 'array':
      node['items'] = convert(node['items'], `${path}[]`);
      break;
    case 'integer':
      fixInteger(node);
      break;
    case 'string':
      // zod spells date-time as a regex too; the apiserver checks `format` itself, with offsets.
      if (node['format'] === 'date-time') delete node['pattern'];
      break;
  }
  return ordered(node);
}

const FIRST_KEYS = ['description', 'type', 'format'];
const LAST_KEYS = ['properties', 'additionalProperties', 'items', 'required'];

/** Same keys, in a reading order (what it is first, what it contains last), for reviewable YAML. */
function ordered(node: SchemaNode): SchemaNode {
  const keys = Object.keys(node);
  const middle = keys.filter((k) => !FIRST_KEYS.includes(k) && !LAST_KEYS.includes(k));
  const out: SchemaNode = {};
  for (const k of [...FIRST_KEYS, ...middle, ...LAST_KEYS]) if (k in node) out[k] = node[k];
  return out;
}

const ROOT_TYPE_META: SchemaNode = {
  apiVersion: {
    type: 'string',
    description:
      'APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values.',
  },
  kind: {
    type: 'string',
    description:
      'Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. In CamelCase.',
  },
  // At the root only name/generateName may be restricted; the apiserver owns metadata's schema.
  metadata: { type: 'object' },
};

/**
 * The openAPIV3Schema of a CRD version, built from the zod schema of the kind, so the CRD and
 * the TypeScript parser can never disagree. Descriptions become `kubectl explain` text;
 * `.meta()` extensions (`x-kubernetes-*`) pass through; anything not structural throws.
 */
export function toStructuralSchema(schema: z.ZodType): SchemaNode {
  const json = z.toJSONSchema(schema, { io: 'input', target: 'openapi-3.0', unrepresentable: 'throw' }) as SchemaNode;
  delete json['$schema'];
  const root = convert(json, '');
  const props = isNode(root['properties']) ? root['properties'] : {};
  root['properties'] = { ...props, ...ROOT_TYPE_META };
  const required = Array.isArray(root['required'])
    ? (root['required'] as unknown[]).filter((r) => r !== 'apiVersion' && r !== 'kind' && r !== 'metadata')
    : [];
  if (required.length > 0) root['required'] = required;
  else delete root['required'];
  return ordered(root);
}
