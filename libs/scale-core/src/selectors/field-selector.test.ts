import fc from 'fast-check';
import { isBadRequestError } from '../errors/status-errors';
import {
  assertFieldsSupported,
  escapeFieldValue,
  fieldSelectorMatches,
  formatFieldSelector,
  parseFieldSelector,
  requiresExactMatch,
  type FieldSelector,
} from './field-selector';
import { SelectorParseError } from './selector-parse-error';

function parseError(s: string): SelectorParseError {
  try {
    parseFieldSelector(s);
  } catch (err) {
    if (err instanceof SelectorParseError) return err;
    throw err;
  }
  throw new Error(`expected ${JSON.stringify(s)} to be rejected`);
}

describe('parseFieldSelector', () => {
  it('parses =, == and != joined by commas', () => {
    expect(parseFieldSelector('metadata.name=a,status.nodeName!=n1,metadata.namespace==ns').requirements).toEqual([
      { field: 'metadata.name', operator: '=', value: 'a' },
      { field: 'metadata.namespace', operator: '=', value: 'ns' },
      { field: 'status.nodeName', operator: '!=', value: 'n1' },
    ]);
  });

  it('reads an empty selector, and empty terms, as everything', () => {
    expect(parseFieldSelector('').requirements).toEqual([]);
    expect(parseFieldSelector(',,').requirements).toEqual([]);
  });

  it('allows an empty value', () => {
    expect(parseFieldSelector('status.nodeName=').requirements).toEqual([{ field: 'status.nodeName', operator: '=', value: '' }]);
  });

  it('unescapes \\, \\= and \\\\ in values', () => {
    expect(parseFieldSelector('metadata.name=a\\,b\\=c\\\\d').requirements).toEqual([
      { field: 'metadata.name', operator: '=', value: 'a,b=c\\d' },
    ]);
  });

  it('splits on the first operator, trying != before == before =', () => {
    expect(parseFieldSelector('a!=b').requirements[0]).toMatchObject({ field: 'a', operator: '!=' });
    expect(parseFieldSelector('a==b').requirements[0]).toMatchObject({ field: 'a', value: 'b' });
  });

  it.each([
    ['metadata.name', 0, "can't understand 'metadata.name'"],
    ['a=b,c', 4, "can't understand 'c'"],
    ['a=b=c', 3, "unescaped character in value: '='"],
    ['a=b\\x', 3, 'invalid escape sequence: \\x'],
    ['a=b\\', 3, 'invalid escape sequence: \\'],
    ['a==b=c', 4, "unescaped character in value: '='"],
  ])('rejects %p at position %i with %p', (selector, position, detail) => {
    const err = parseError(selector);
    expect(err.position).toBe(position);
    expect(err.detail).toBe(detail);
    expect(isBadRequestError(err)).toBe(true);
  });
});

describe('fieldSelectorMatches', () => {
  const fields = { 'metadata.name': 'b', 'metadata.namespace': 'ns', 'status.nodeName': 'n1' };

  it.each([
    ['', true],
    ['metadata.name=b', true],
    ['metadata.name=c', false],
    ['metadata.name!=c', true],
    ['status.nodeName=n1,metadata.namespace=ns', true],
    ['status.nodeName=n1,metadata.namespace=other', false],
    ['spec.unknown=', true],
    ['spec.unknown!=', false],
  ])('%p -> %p', (sel, expected) => {
    expect(fieldSelectorMatches(parseFieldSelector(sel), fields)).toBe(expected);
  });
});

describe('field selector helpers', () => {
  it('rejects fields the resource does not support as a BadRequest naming the field', () => {
    const supported = ['metadata.name', 'metadata.namespace', 'status.nodeName'];
    expect(() => assertFieldsSupported(parseFieldSelector('status.nodeName=n1'), supported)).not.toThrow();
    expect(() => assertFieldsSupported(parseFieldSelector('spec.foo=1'), supported)).toThrow('field label not supported: spec.foo');
  });

  it('finds the value a selector pins a field to', () => {
    expect(requiresExactMatch(parseFieldSelector('metadata.name=s1'), 'metadata.name')).toBe('s1');
    expect(requiresExactMatch(parseFieldSelector('metadata.name!=s1'), 'metadata.name')).toBeUndefined();
  });

  it('escapes the three special characters', () => {
    expect(escapeFieldValue('a,b=c\\d')).toBe('a\\,b\\=c\\\\d');
  });
});

describe('field selector properties', () => {
  const field = fc.stringMatching(/^[a-z]{1,6}(\.[a-zA-Z]{1,8}){0,2}$/);
  const selector: fc.Arbitrary<FieldSelector> = fc
    .array(fc.record({ field, operator: fc.constantFrom<'=' | '!='>('=', '!='), value: fc.string({ maxLength: 12 }) }), { maxLength: 5 })
    .map((requirements) => parseFieldSelector(formatFieldSelector({ requirements })));

  it('parse(format(s)) gives s back, whatever the values contain', () => {
    fc.assert(
      fc.property(selector, (s) => {
        expect(parseFieldSelector(formatFieldSelector(s))).toEqual(s);
      }),
      { numRuns: 500 },
    );
  });

  it('matches a value exactly after escaping it', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 20 }), (v) => {
        expect(fieldSelectorMatches(parseFieldSelector(`metadata.name=${escapeFieldValue(v)}`), { 'metadata.name': v })).toBe(true);
      }),
    );
  });

  it('never throws anything but SelectorParseError on arbitrary input', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (s) => {
        try {
          parseFieldSelector(s);
        } catch (err) {
          expect(err).toBeInstanceOf(SelectorParseError);
        }
      }),
      { numRuns: 1000 },
    );
  });
});
