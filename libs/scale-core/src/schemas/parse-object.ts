import type { z } from 'zod';
import { InvalidError, type StatusCause } from '../errors/status-errors';

/** One field problem of an object that failed its schema. */
export interface FieldIssue {
  /** Kubernetes field path, e.g. `spec.replicas`, `spec.podTemplate.spec.containers[0].image`. */
  readonly field: string;
  readonly reason: 'FieldValueRequired' | 'FieldValueInvalid' | 'FieldValueNotSupported';
  readonly message: string;
}

/**
 * An object that does not match its kind's schema. It is an Invalid (422) StatusError whose
 * message and causes name every offending field path, so a 422 body, a log line and a
 * condition message all say which field is wrong.
 */
export class ObjectValidationError extends InvalidError {
  readonly issues: readonly FieldIssue[];
  constructor(kind: string, group: string, name: string, issues: readonly FieldIssue[]) {
    super(
      { group, kind },
      name,
      issues.map((i): StatusCause => ({ reason: i.reason, field: i.field, message: i.message })),
    );
    this.issues = issues;
  }
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** `['spec', 'containers', 0, 'image']` -> `spec.containers[0].image`; map keys with dots go in brackets. */
export function formatFieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else if (typeof seg === 'string' && IDENTIFIER.test(seg)) out += out === '' ? seg : `.${seg}`;
    else out += `[${String(seg)}]`;
  }
  return out;
}

/** A zod error as one line for a 400's message: `path: message` per issue, joined by `separator`. */
export function issuesText(error: z.ZodError, separator = ', '): string {
  return error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join(separator);
}

function valueAt(obj: unknown, path: readonly PropertyKey[]): unknown {
  let cur = obj;
  for (const seg of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[seg];
  }
  return cur;
}

function render(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean' || v === null) return String(v);
  return Array.isArray(v) ? 'array' : typeof v;
}

function toFieldIssues(obj: unknown, issue: z.core.$ZodIssue): FieldIssue[] {
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((k) => ({
      field: formatFieldPath([...issue.path, k]),
      reason: 'FieldValueNotSupported',
      message: 'unknown field',
    }));
  }
  const field = formatFieldPath(issue.path);
  const value = valueAt(obj, issue.path);
  if (value === undefined && issue.code === 'invalid_type') return [{ field, reason: 'FieldValueRequired', message: 'Required value' }];
  if (issue.code === 'invalid_value') {
    const allowed = issue.values.map((v) => render(v)).join(', ');
    return [{ field, reason: 'FieldValueNotSupported', message: `Unsupported value: ${render(value)}: supported values: ${allowed}` }];
  }
  return [{ field, reason: 'FieldValueInvalid', message: `Invalid value: ${render(value)}: ${issue.message}` }];
}

function identify(obj: unknown): { kind: string; group: string; name: string } {
  const o = obj !== null && typeof obj === 'object' ? (obj as Record<string, unknown>) : {};
  const kind = typeof o['kind'] === 'string' ? o['kind'] : 'Object';
  const apiVersion = typeof o['apiVersion'] === 'string' ? o['apiVersion'] : '';
  const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
  const meta = o['metadata'];
  const name = meta !== null && typeof meta === 'object' ? (meta as Record<string, unknown>)['name'] : undefined;
  return { kind, group, name: typeof name === 'string' ? name : '' };
}

export type ParseResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: ObjectValidationError };

/** Validates an API object against its schema; never throws. Defaults (e.g. replicas 1) are applied. */
export function tryParseObject<S extends z.ZodType>(schema: S, obj: unknown): ParseResult<z.output<S>> {
  const r = schema.safeParse(obj);
  if (r.success) return { ok: true, value: r.data };
  const issues = r.error.issues.flatMap((i) => toFieldIssues(obj, i));
  const id = identify(obj);
  return { ok: false, error: new ObjectValidationError(id.kind, id.group, id.name, issues) };
}

/** Validates an API object against its schema, or throws ObjectValidationError naming each bad field. */
export function parseObject<S extends z.ZodType>(schema: S, obj: unknown): z.output<S> {
  const r = tryParseObject(schema, obj);
  if (r.ok) return r.value;
  throw r.error;
}
