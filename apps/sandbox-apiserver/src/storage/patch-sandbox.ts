import {
  ANNOTATIONS,
  BadRequestError,
  ConflictError,
  findPrototypeKey,
  InvalidError,
  isPrototypeKey,
  SANDBOX_GROUP,
  StatusError,
  validateLabelKey,
  validateLabelValue,
  type ServedSandbox,
} from '@sandbox-scale/scale-core';

/** The patch media types whose body is a change of the served object. */
export const PATCH_TYPES = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  strategic: 'application/strategic-merge-patch+json',
} as const;
export type PatchType = (typeof PATCH_TYPES)[keyof typeof PATCH_TYPES];

/** Server-side apply's media type: the body is the manager's whole intent, not a diff. */
export const APPLY_PATCH_TYPE = 'application/apply-patch+yaml';
export type RequestPatchType = PatchType | typeof APPLY_PATCH_TYPE;

/** Labels and annotations with this prefix are the server's (node, phase, claim, claim id, deadline); users cannot set them. */
export const RESERVED_PREFIX = 'sandbox.cocoonstack.io/';

export interface UserMetadata {
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
}

/** Spec fields a create sets once; a patch may repeat them (kubectl apply does) but not change them. */
export const CREATE_TIME_SPEC_FIELDS = ['podTemplate', 'shutdownTime', 'shutdownPolicy', 'volumeClaimTemplates', 'service'] as const;

/** Reserved annotations a create reads (the network lane, the TTL): a re-apply may repeat them as created. */
export const CREATE_TIME_ANNOTATIONS: readonly string[] = [ANNOTATIONS.net, ANNOTATIONS.ttlSeconds];

/**
 * What a patch asks for: new user metadata, a new operating mode when it changes
 * spec.operatingMode, the create-time spec fields and reserved annotations it repeats (checked
 * against the create by the caller), and metadata.managedFields when it rewrites them.
 */
export interface PatchOutcome {
  readonly metadata: UserMetadata;
  readonly operatingMode?: 'Running' | 'Suspended';
  readonly createTimeSpec: Readonly<Record<string, unknown>>;
  readonly createTimeAnnotations: Readonly<Record<string, string>>;
  readonly managedFields?: unknown;
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const invalid = (name: string, field: string, message: string): InvalidError =>
  new InvalidError({ group: SANDBOX_GROUP, kind: 'Sandbox' }, name, [{ reason: 'FieldValueForbidden', field, message }]);

const isObject = (v: Json | undefined): v is { [k: string]: Json } => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A path part a JSON patch names is never one that reaches a prototype: `o['__proto__']` is
 * Object.prototype itself, and `constructor`/`prototype` lead there too. Such a part is a 422
 * naming the path.
 */
function refusePrototypeKey(path: string, key: string): void {
  if (!isPrototypeKey(key)) return;
  const message = `${key} is not allowed in a JSON patch path: it names an object's prototype`;
  throw new StatusError('Invalid', `JSON patch path ${path}: ${message}`, {
    causes: [{ reason: 'FieldValueForbidden', field: path, message }],
  });
}

/** An array index as RFC 6901 writes it: digits without a leading zero. */
const ARRAY_INDEX = /^(0|[1-9][0-9]*)$/;

/** The member a pointer token names: own properties only, so nothing inherited is ever reached. */
function member(node: Json | undefined, t: string): Json | undefined {
  if (Array.isArray(node)) return ARRAY_INDEX.test(t) ? node[Number(t)] : undefined;
  if (isObject(node) && Object.hasOwn(node, t)) return node[t];
  return undefined;
}

/** RFC 7386. A strategic merge patch is the same on the maps a Sandbox lets users change; its directives are refused. */
function mergePatch(target: Json | undefined, patch: Json, strategic: boolean): Json {
  if (!isObject(patch)) return patch;
  const out: { [k: string]: Json } = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (strategic && k.startsWith('$')) throw new BadRequestError(`strategic merge patch directive ${k} is not supported on sandboxes`);
    if (v === null) delete out[k];
    // defined, not assigned: an assignment to a key `__proto__` would replace the object's prototype
    else
      Object.defineProperty(out, k, {
        value: mergePatch(Object.hasOwn(out, k) ? out[k] : undefined, v, strategic),
        writable: true,
        enumerable: true,
        configurable: true,
      });
  }
  return out;
}

const unescape = (s: string): string => s.replaceAll('~1', '/').replaceAll('~0', '~');

function pointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw new BadRequestError(`JSON patch path ${JSON.stringify(path)} does not start with /`);
  const tokens = path.slice(1).split('/').map(unescape);
  for (const t of tokens) refusePrototypeKey(path, t);
  return tokens;
}

function parentOf(doc: Json, tokens: string[], path: string): { parent: { [k: string]: Json } | Json[]; key: string } {
  let node: Json = doc;
  for (const t of tokens.slice(0, -1)) {
    const next = member(node, t);
    if (next === undefined) throw new StatusError('Invalid', `JSON patch path ${path}: ${t} does not exist`);
    node = next;
  }
  if (!isObject(node) && !Array.isArray(node))
    throw new StatusError('Invalid', `JSON patch path ${path} does not name a member of an object or array`);
  return { parent: node, key: tokens[tokens.length - 1] ?? '' };
}

function getAt(doc: Json, path: string): Json | undefined {
  let node: Json | undefined = doc;
  for (const t of pointer(path)) node = member(node, t);
  return node;
}

function removeAt(doc: Json, path: string): Json {
  const tokens = pointer(path);
  const { parent, key } = parentOf(doc, tokens, path);
  if (Array.isArray(parent)) {
    const i = ARRAY_INDEX.test(key) ? Number(key) : -1;
    if (i < 0 || i >= parent.length) throw new StatusError('Invalid', `JSON patch remove: ${path} does not exist`);
    return parent.splice(i, 1)[0] as Json;
  }
  if (!Object.hasOwn(parent, key)) throw new StatusError('Invalid', `JSON patch remove: ${path} does not exist`);
  const v = parent[key] as Json;
  delete parent[key];
  return v;
}

function addAt(doc: Json, path: string, value: Json): Json {
  const tokens = pointer(path);
  if (tokens.length === 0) return value;
  const { parent, key } = parentOf(doc, tokens, path);
  if (Array.isArray(parent)) {
    const i = key === '-' ? parent.length : ARRAY_INDEX.test(key) ? Number(key) : -1;
    if (i < 0 || i > parent.length) throw new StatusError('Invalid', `JSON patch add: index ${key} out of range at ${path}`);
    parent.splice(i, 0, value);
  } else Object.defineProperty(parent, key, { value, writable: true, enumerable: true, configurable: true });
  return doc;
}

const clone = (v: Json): Json => JSON.parse(JSON.stringify(v)) as Json;

/** RFC 6902: add, remove, replace, move, copy, test. */
function jsonPatch(doc: Json, ops: Json): Json {
  if (!Array.isArray(ops)) throw new BadRequestError('a JSON patch is an array of operations');
  let out = clone(doc);
  for (const op of ops) {
    if (!isObject(op) || typeof op['op'] !== 'string' || typeof op['path'] !== 'string')
      throw new BadRequestError('every JSON patch operation needs op and path');
    const path = op['path'];
    const from = typeof op['from'] === 'string' ? op['from'] : undefined;
    switch (op['op']) {
      case 'add':
        out = addAt(out, path, clone(op['value'] ?? null));
        break;
      case 'remove':
        removeAt(out, path);
        break;
      case 'replace':
        removeAt(out, path);
        out = addAt(out, path, clone(op['value'] ?? null));
        break;
      case 'move': {
        if (from === undefined) throw new BadRequestError('JSON patch move needs from');
        out = addAt(out, path, removeAt(out, from));
        break;
      }
      case 'copy': {
        const v = from === undefined ? undefined : getAt(out, from);
        if (v === undefined) throw new StatusError('Invalid', `JSON patch copy: ${from ?? '(no from)'} does not exist`);
        out = addAt(out, path, clone(v));
        break;
      }
      case 'test':
        if (JSON.stringify(getAt(out, path)) !== JSON.stringify(op['value']))
          throw new StatusError('Invalid', `JSON patch test failed at ${path}`);
        break;
      default:
        throw new BadRequestError(`JSON patch operation ${JSON.stringify(op['op'])} is not supported`);
    }
  }
  return out;
}

function userMap(
  name: string,
  field: 'metadata.labels' | 'metadata.annotations',
  v: Json | undefined,
  served: Readonly<Record<string, string>>,
  createTime: Record<string, string> = {},
): Record<string, string> {
  if (v === undefined || v === null) v = {};
  if (!isObject(v)) throw invalid(name, field, 'must be a map of strings');
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(v)) {
    if (typeof val !== 'string') throw invalid(name, `${field}[${k}]`, 'must be a string');
    if (k.startsWith(RESERVED_PREFIX)) {
      // repeated from the create's manifest: checked against what the create asked by the caller
      if (field === 'metadata.annotations' && CREATE_TIME_ANNOTATIONS.includes(k) && !Object.hasOwn(served, k)) {
        createTime[k] = val;
        continue;
      }
      if (!Object.hasOwn(served, k) || served[k] !== val)
        throw invalid(name, `${field}[${k}]`, `keys under ${RESERVED_PREFIX} are set by the server and cannot be changed`);
      continue;
    }
    // apimachinery's rules (IsQualifiedName for every key, IsValidLabelValue for label values)
    const problems = [...validateLabelKey(k), ...(field === 'metadata.labels' ? validateLabelValue(val) : [])];
    if (problems.length > 0) throw invalid(name, `${field}[${k}]`, problems.join('; '));
    out[k] = val;
  }
  for (const k of Object.keys(served)) {
    if (k.startsWith(RESERVED_PREFIX) && !Object.hasOwn(v, k))
      throw invalid(name, `${field}[${k}]`, `keys under ${RESERVED_PREFIX} are set by the server and cannot be removed`);
  }
  if (field === 'metadata.annotations' && JSON.stringify(out).length > 256 * 1024)
    throw invalid(name, field, 'annotations may hold 256 KiB at most');
  return out;
}

/** Paths of the leaves that differ between a and b, below `at`. */
function changedPaths(a: Json | undefined, b: Json | undefined, at: string, out: string[]): void {
  if (JSON.stringify(a) === JSON.stringify(b)) return;
  if (isObject(a) && isObject(b)) {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) changedPaths(a[k], b[k], at === '' ? k : `${at}.${k}`, out);
    return;
  }
  out.push(at === '' ? '<root>' : at);
}

/**
 * A patch of a served Sandbox: labels and annotations (metadata.labels, metadata.annotations),
 * and spec.operatingMode (agent-sandbox's way to suspend), nothing else. Any other field a patch
 * changes is a 422 naming it; a resourceVersion in the patch that is not the current one is a 409.
 */
export function applySandboxPatch(current: ServedSandbox, type: PatchType, patch: unknown): PatchOutcome {
  const name = current.metadata.name;
  const before = JSON.parse(JSON.stringify(current)) as Json;
  if (patch === undefined) throw new BadRequestError('the patch is empty');
  // every key of the patch, at any depth (merge patch keys, JSON patch values), before any is applied
  const protoKey = findPrototypeKey(patch);
  if (protoKey !== undefined) throw invalid(name, protoKey, "it is not allowed as a key: it names an object's prototype");
  const after =
    type === PATCH_TYPES.json ? jsonPatch(before, patch as Json) : mergePatch(before, patch as Json, type === PATCH_TYPES.strategic);
  if (!isObject(after)) throw invalid(name, '<root>', 'a patch must leave an object');
  const meta = isObject(after['metadata']) ? after['metadata'] : {};
  const rv = meta['resourceVersion'];
  if (rv !== undefined && rv !== current.metadata.resourceVersion) {
    throw new ConflictError(
      `Operation cannot be fulfilled on sandboxes.${SANDBOX_GROUP} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
      { name, group: SANDBOX_GROUP, kind: 'sandboxes' },
    );
  }
  const spec = isObject(after['spec']) ? after['spec'] : {};
  const mode = spec['operatingMode'];
  if (mode !== undefined && mode !== 'Running' && mode !== 'Suspended')
    throw invalid(name, 'spec.operatingMode', 'must be Running or Suspended');
  const changed: string[] = [];
  const strip = (o: { [k: string]: Json }): { [k: string]: Json } => {
    const m = isObject(o['metadata']) ? { ...o['metadata'] } : {};
    delete m['labels'];
    delete m['annotations'];
    delete m['resourceVersion'];
    delete m['managedFields'];
    const s = isObject(o['spec']) ? { ...o['spec'] } : {};
    delete s['operatingMode'];
    for (const f of CREATE_TIME_SPEC_FIELDS) delete s[f];
    return { ...o, metadata: m, spec: s };
  };
  changedPaths(strip(before as { [k: string]: Json }), strip(after), '', changed);
  if (changed.length > 0) {
    throw new InvalidError(
      { group: SANDBOX_GROUP, kind: 'Sandbox' },
      name,
      changed.map((field) => ({
        reason: 'FieldValueForbidden',
        field,
        message:
          "a Sandbox's only mutable fields are metadata.labels, metadata.annotations and spec.operatingMode (Suspended hibernates the microVM, Running wakes it; also POST sandboxes/<name>/pause and /resume)",
      })),
    );
  }
  const createTimeAnnotations: Record<string, string> = {};
  const metadata = {
    labels: userMap(name, 'metadata.labels', meta['labels'], current.metadata.labels),
    annotations: userMap(name, 'metadata.annotations', meta['annotations'], current.metadata.annotations ?? {}, createTimeAnnotations),
  };
  const createTimeSpec = Object.fromEntries(CREATE_TIME_SPEC_FIELDS.flatMap((f) => (spec[f] === undefined ? [] : [[f, spec[f]]])));
  const served = current.metadata.managedFields ?? [];
  const managedFields = meta['managedFields'];
  const rewritesOwners = managedFields !== undefined && JSON.stringify(managedFields) !== JSON.stringify(served);
  return {
    metadata,
    ...(mode !== undefined ? { operatingMode: mode } : {}),
    createTimeSpec,
    createTimeAnnotations,
    ...(rewritesOwners ? { managedFields } : {}),
  };
}
