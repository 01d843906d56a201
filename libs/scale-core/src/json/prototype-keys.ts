import type { z } from 'zod';
import { SandboxScaleError } from '../errors/base';
import { StatusError } from '../errors/status-errors';

/**
 * Property names that, used as a key, reach past an object to what it inherits from:
 * `o['__proto__']` is the prototype itself (and assigning to it replaces it), `o['constructor']`
 * the constructor, whose `prototype` is shared by every object of the process. A key taken from
 * untrusted input is never one of these, at any depth.
 */
export const PROTOTYPE_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

export const isPrototypeKey = (key: string): boolean => PROTOTYPE_KEYS.has(key);

/**
 * Untrusted JSON held a prototype key. A 422 Invalid naming the field, so a client sees which
 * part of its body was refused; `field` is the key's path, `a.b[0].__proto__`.
 */
export class PrototypeKeyError extends StatusError {
  readonly field: string;
  constructor(field: string, what = 'the body') {
    const key = field.slice(Math.max(field.lastIndexOf('.'), field.lastIndexOf(']')) + 1);
    const message = `${key} is not allowed as a key: it names an object's prototype`;
    super('Invalid', `${what} is invalid: ${field}: ${message}`, { causes: [{ reason: 'FieldValueForbidden', field, message }] });
    this.field = field;
  }
}

export function isPrototypeKeyError(err: unknown): err is PrototypeKeyError {
  return err instanceof PrototypeKeyError;
}

/** The text cannot hold a prototype key when none is written in it, plainly or escaped. */
const MAY_HOLD = /__proto__|constructor|prototype|\\u/;

/** Whether JSON or YAML text may hold a prototype key; false is certain, so most bodies skip the walk. */
export const mayHoldPrototypeKey = (text: string): boolean => MAY_HOLD.test(text);

const childPath = (at: string, key: string): string => (at === '' ? key : `${at}.${key}`);

/**
 * The path of the first prototype key anywhere in a parsed value (own keys only, walked without
 * recursion so a deeply nested body cannot exhaust the stack), or undefined. An object whose
 * prototype is not a plain object's or null counts too: a parser that assigned a `__proto__` key
 * has replaced it.
 */
export function findPrototypeKey(value: unknown): string | undefined {
  const stack: Array<{ v: unknown; at: string }> = [{ v: value, at: '' }];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const { v, at } = item;
    if (typeof v !== 'object' || v === null) continue;
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ v: v[i], at: `${at}[${i}]` });
      continue;
    }
    const proto: unknown = Object.getPrototypeOf(v);
    if (proto !== Object.prototype && proto !== null) return childPath(at, '__proto__');
    for (const key of Object.keys(v)) {
      if (isPrototypeKey(key)) return childPath(at, key);
      stack.push({ v: (v as Record<string, unknown>)[key], at: childPath(at, key) });
    }
  }
  return undefined;
}

/** Refuses a parsed value holding a prototype key; `text` is what it was parsed from, when known, to skip the walk. */
export function assertNoPrototypeKeys(value: unknown, what?: string, text?: string): void {
  if (text !== undefined && !mayHoldPrototypeKey(text)) return;
  const field = findPrototypeKey(value);
  if (field !== undefined) throw new PrototypeKeyError(field, what);
}

/** Text that is not JSON. */
export class JsonSyntaxError extends SandboxScaleError {}

export function isJsonSyntaxError(err: unknown): err is JsonSyntaxError {
  return err instanceof JsonSyntaxError;
}

/**
 * The one parser of JSON a client, a node or a peer sent: JSON.parse, then a PrototypeKeyError
 * for a prototype key at any depth (a JsonSyntaxError for text that is not JSON). Bodies without
 * one of those words cost JSON.parse alone.
 */
export function parseUntrustedJson(text: string, what?: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (err) {
    throw new JsonSyntaxError((err as Error).message, { cause: err });
  }
  assertNoPrototypeKeys(value, what, text);
  return value;
}

/**
 * A deep copy of parsed JSON whose objects have no prototype at all, so a field the sender left
 * out reads as undefined whatever the process's prototypes hold. For answers that decide who a
 * caller is or what it may do (TokenReview, SubjectAccessReview), read by schemas that would
 * otherwise take an inherited property for a missing one.
 */
export function withoutPrototypes(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(withoutPrototypes);
  const out = Object.create(null) as Record<string, unknown>;
  for (const key of Object.keys(value)) out[key] = withoutPrototypes((value as Record<string, unknown>)[key]);
  return out;
}

/**
 * A schema's reading of untrusted JSON in which nothing is inherited, neither in what the schema
 * reads nor in what it returns: a schema leaves an absent optional field out of its output, and
 * reading that field from an ordinary object would ask its prototype.
 */
export function parseOwn<S extends z.ZodType>(schema: S, raw: unknown): z.output<S> {
  return withoutPrototypes(schema.parse(withoutPrototypes(raw))) as z.output<S>;
}
