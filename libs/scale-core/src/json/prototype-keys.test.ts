import { z } from 'zod';
import fc from 'fast-check';
import {
  findPrototypeKey,
  isJsonSyntaxError,
  isPrototypeKeyError,
  mayHoldPrototypeKey,
  parseOwn,
  parseUntrustedJson,
  PrototypeKeyError,
  withoutPrototypes,
} from './prototype-keys';

const refusal = (text: string): { field: string; code: number } | 'accepted' => {
  try {
    parseUntrustedJson(text);
  } catch (err) {
    if (isPrototypeKeyError(err)) return { field: err.field, code: err.code };
    throw err;
  }
  return 'accepted';
};

describe('parseUntrustedJson', () => {
  it.each([
    ['{"__proto__":{"polluted":1}}', '__proto__'],
    ['{"a":{"constructor":{"prototype":{"x":1}}}}', 'a.constructor'],
    ['{"a":[1,{"prototype":2}]}', 'a[1].prototype'],
    ['[{"b":{"__proto__":null}}]', '[0].b.__proto__'],
    // escaped forms decode to the same keys
    ['{"\\u005f_proto__":1}', '__proto__'],
    ['{"x":{"constructo\\u0072":1}}', 'x.constructor'],
  ])('refuses %s with a 422 naming %s', (text, field) => {
    expect(refusal(text)).toEqual({ field, code: 422 });
  });

  it('accepts the words as values, and keys that merely contain them', () => {
    expect(parseUntrustedJson('{"a":"__proto__","constructorName":"constructor","my.prototype":[]}')).toEqual({
      a: '__proto__',
      constructorName: 'constructor',
      'my.prototype': [],
    });
  });

  it('says when the text is not JSON, apart from a refused key', () => {
    let err: unknown;
    try {
      parseUntrustedJson('{"a":');
    } catch (e) {
      err = e;
    }
    expect(isJsonSyntaxError(err)).toBe(true);
    expect(isPrototypeKeyError(err)).toBe(false);
  });

  it('walks a body nested far deeper than the stack would allow a recursive walk', () => {
    const depth = 200_000;
    const text = `${'{"a":'.repeat(depth)}{"__proto__":1}${'}'.repeat(depth)}`;
    const value = (() => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        return undefined; // this engine's JSON.parse refuses the depth itself: nothing to walk
      }
    })();
    if (value !== undefined) expect(findPrototypeKey(value)).toMatch(/__proto__$/);
    const shallow = `${'[{"a":'.repeat(2000)}{"__proto__":1}${'}]'.repeat(2000)}`;
    expect(findPrototypeKey(JSON.parse(shallow))).toMatch(/\.__proto__$/);
  });

  it('finds an object whose prototype a parser replaced', () => {
    const replaced: Record<string, unknown> = {};
    Object.setPrototypeOf(replaced, { polluted: 1 });
    expect(findPrototypeKey({ a: [replaced] })).toBe('a[0].__proto__');
    expect(findPrototypeKey(Object.create(null))).toBeUndefined();
  });

  it('skips the walk only for text that cannot hold such a key, never wrongly (property)', () => {
    const keys = fc.oneof(fc.constantFrom('__proto__', 'constructor', 'prototype', 'a', 'b'), fc.string());
    const json = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        fc.integer(),
        fc.string(),
        fc.array(tie('value'), { maxLength: 3 }),
        fc.dictionary(keys, tie('value'), { maxKeys: 3 }),
      ),
    })).value;
    fc.assert(
      fc.property(json, (v) => {
        const text = JSON.stringify(v);
        const parsed = JSON.parse(text) as unknown;
        if (findPrototypeKey(parsed) !== undefined) expect(mayHoldPrototypeKey(text)).toBe(true);
      }),
    );
  });

  it('is a StatusError of reason Invalid with a cause naming the field', () => {
    const err = new PrototypeKeyError('spec.__proto__', 'Sandbox "x"');
    expect(err.reason).toBe('Invalid');
    expect(err.details.causes).toEqual([
      { reason: 'FieldValueForbidden', field: 'spec.__proto__', message: expect.stringContaining('__proto__') },
    ]);
    expect(err.message).toMatch(/^Sandbox "x" is invalid: spec.__proto__: /);
  });
});

describe('withoutPrototypes', () => {
  it('copies JSON into objects that inherit nothing, so a missing field stays missing', () => {
    const copy = withoutPrototypes(JSON.parse('{"status":{"user":{"groups":["g"]}},"list":[{"a":1}]}')) as Record<
      string,
      Record<string, unknown>
    >;
    expect(Object.getPrototypeOf(copy)).toBeNull();
    expect(Object.getPrototypeOf(copy['status'])).toBeNull();
    expect(copy['status']?.['toString']).toBeUndefined();
    expect(JSON.stringify(copy)).toBe('{"status":{"user":{"groups":["g"]}},"list":[{"a":1}]}');
  });
});

describe('parseOwn', () => {
  it('returns what the schema read, with nothing inherited in its output either', () => {
    const schema = z.object({ status: z.object({ allowed: z.boolean().optional() }).optional() });
    const proto = Object.prototype as Record<string, unknown>;
    proto['allowed'] = true;
    try {
      const out = parseOwn(schema, { status: {} });
      expect(out.status?.allowed).toBeUndefined();
      // a schema's own output would have answered from the prototype
      expect(schema.parse({ status: {} }).status?.allowed).toBe(true);
    } finally {
      delete proto['allowed'];
    }
  });
});
