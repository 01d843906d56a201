import fc from 'fast-check';
import { statusForError } from '../errors/status-for-error';
import {
  formatLabelSelector,
  labelSelectorMatches,
  parseLabelSelector,
  type LabelOperator,
  type LabelRequirement,
  type LabelSelector,
} from './label-selector';
import { validateLabelKey, validateLabelValue } from './label-validation';
import { SelectorParseError } from './selector-parse-error';

const parse = (s: string): LabelRequirement[] => [...parseLabelSelector(s).requirements];
const matches = (sel: string, labels: Record<string, string>): boolean => labelSelectorMatches(parseLabelSelector(sel), labels);

function parseError(s: string): SelectorParseError {
  try {
    parseLabelSelector(s);
  } catch (err) {
    if (err instanceof SelectorParseError) return err;
    throw err;
  }
  throw new Error(`expected ${JSON.stringify(s)} to be rejected`);
}

describe('parseLabelSelector', () => {
  it('parses every operator of the grammar', () => {
    expect(parse('a=1,b==2,c!=3,d in (x, y),e notin (z),f,!g,h>5,i<7')).toEqual([
      { key: 'a', operator: '=', values: ['1'] },
      { key: 'b', operator: '==', values: ['2'] },
      { key: 'c', operator: '!=', values: ['3'] },
      { key: 'd', operator: 'in', values: ['x', 'y'] },
      { key: 'e', operator: 'notin', values: ['z'] },
      { key: 'f', operator: 'exists', values: [] },
      { key: 'g', operator: '!', values: [] },
      { key: 'h', operator: 'gt', values: ['5'] },
      { key: 'i', operator: 'lt', values: ['7'] },
    ]);
  });

  it('reads an empty or blank selector as everything', () => {
    expect(parse('')).toEqual([]);
    expect(parse('  \t')).toEqual([]);
  });

  it('allows whitespace around tokens and prefixed keys', () => {
    expect(parse('  sandbox.cocoonstack.io/phase  =  Running , !x ')).toEqual([
      { key: 'sandbox.cocoonstack.io/phase', operator: '=', values: ['Running'] },
      { key: 'x', operator: '!', values: [] },
    ]);
  });

  it('sorts requirements by key and set values, dropping duplicates', () => {
    expect(parse('z=1,a in (c,b,c)')).toEqual([
      { key: 'a', operator: 'in', values: ['b', 'c'] },
      { key: 'z', operator: '=', values: ['1'] },
    ]);
  });

  it('reads empty values as Go does: a=, in (), (,a) and (a,)', () => {
    expect(parse('a=')).toEqual([{ key: 'a', operator: '=', values: [''] }]);
    expect(parse('a in ()')).toEqual([{ key: 'a', operator: 'in', values: [''] }]);
    expect(parse('a in (,x)')).toEqual([{ key: 'a', operator: 'in', values: ['', 'x'] }]);
    expect(parse('a notin (x,)')).toEqual([{ key: 'a', operator: 'notin', values: ['', 'x'] }]);
  });

  it('treats in and notin as plain words where a key or value is expected', () => {
    expect(parse('in=notin')).toEqual([{ key: 'in', operator: '=', values: ['notin'] }]);
    expect(parse('a in (in,notin)')).toEqual([{ key: 'a', operator: 'in', values: ['in', 'notin'] }]);
  });

  it.each([
    ['a=b c', 4, "found 'c', expected: ',' or 'end of string'"],
    ['a,', 2, "found '', expected: identifier after ','"],
    [',a', 0, "found ',', expected: !, identifier, or 'end of string'"],
    ['a b', 2, "found 'b', expected: in, notin, =, ==, !=, gt, lt"],
    ['a in b', 5, "found 'b' expected: '('"],
    ['a in (b', 7, "found '', expected: ',', ')' or identifier"],
    ['a in (b c)', 8, "found 'c', expected: ',', ')' or identifier"],
    ['a=(b)', 2, "found '(', expected: identifier"],
    ['!a=b', 2, "found '=', expected: ',' or 'end of string'"],
    ['!=a', 0, "found '!=', expected: !, identifier, or 'end of string'"],
    ['a>b', 0, 'the value must be an integer'],
    ['a>', 0, 'the value must be an integer'],
    ['a=b/c', 0, 'values: Invalid value: "b/c"'],
    ['-a=b', 0, 'key: Invalid value: "-a"'],
    ['a/b/c', 0, 'key: Invalid value: "a/b/c"'],
    ['Example.com/a', 0, 'prefix part a lowercase RFC 1123 subdomain'],
  ])('rejects %p at position %i with %p', (selector, position, detail) => {
    const err = parseError(selector);
    expect(err.position).toBe(position);
    expect(err.detail).toContain(detail);
    expect(err.message).toContain(`(at position ${position})`);
    expect(err.message).toContain(JSON.stringify(selector));
  });

  it('becomes a 400 BadRequest', () => {
    expect(statusForError(parseError('a b'))).toMatchObject({ code: 400, reason: 'BadRequest' });
  });

  it('rejects values longer than 63 characters and keys whose name is longer than 63', () => {
    expect(parseError(`a=${'x'.repeat(64)}`).detail).toContain('must be no more than 63 characters');
    expect(parseError(`${'k'.repeat(64)}=1`).detail).toContain('name part must be no more than 63 characters');
  });
});

describe('labelSelectorMatches', () => {
  const labels = { app: 'web', tier: 'front', replicas: '3' };

  it.each([
    ['', true],
    ['app=web', true],
    ['app==web', true],
    ['app=db', false],
    ['app!=db', true],
    ['missing!=x', true],
    ['app in (web,db)', true],
    ['app in (db)', false],
    ['missing in (x)', false],
    ['app notin (db)', true],
    ['app notin (web)', false],
    ['missing notin (x)', true],
    ['app', true],
    ['missing', false],
    ['!missing', true],
    ['!app', false],
    ['replicas>2', true],
    ['replicas>3', false],
    ['replicas<4', true],
    ['app>1', false],
    ['missing<10', false],
    ['app=web,tier=back', false],
    ['app=web,tier=front', true],
  ])('%p on %j -> %p', (sel, expected) => {
    expect(matches(sel, labels)).toBe(expected);
  });

  it('compares gt/lt as 64-bit integers, not strings or floats', () => {
    expect(matches('n>9', { n: '10' })).toBe(true);
    expect(matches('n>9007199254740992', { n: '9007199254740993' })).toBe(true);
    expect(matches('n<0', { n: '99999999999999999999' })).toBe(false);
  });

  it('matches missing labels against an undefined label map', () => {
    expect(labelSelectorMatches(parseLabelSelector('!a'), undefined)).toBe(true);
    expect(labelSelectorMatches(parseLabelSelector('a'), undefined)).toBe(false);
  });
});

const nameChars = fc.constantFrom(...'abcXYZ019-_.'.split(''));
const alnum = fc.constantFrom(...'abcXYZ019'.split(''));
const labelName = fc
  .tuple(alnum, fc.array(nameChars, { maxLength: 10 }), alnum)
  .map(([a, mid, z]) => `${a}${mid.join('')}${z}`)
  .filter((s) => s.length <= 63);
const dnsLabel = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,6}[a-z0-9])?$/);
const labelKey = fc.oneof(
  labelName,
  fc.tuple(fc.array(dnsLabel, { minLength: 1, maxLength: 3 }), labelName).map(([p, n]) => `${p.join('.')}/${n}`),
);
const labelValue = fc.oneof(fc.constant(''), labelName);
const intValue = fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }).map(String);

const requirement: fc.Arbitrary<LabelRequirement> = fc.oneof(
  fc
    .tuple(labelKey, fc.constantFrom<LabelOperator>('=', '==', '!='), labelValue)
    .map(([key, operator, v]) => ({ key, operator, values: [v] })),
  fc
    .tuple(labelKey, fc.constantFrom<LabelOperator>('in', 'notin'), fc.uniqueArray(labelValue, { minLength: 1, maxLength: 4 }))
    .map(([key, operator, vs]) => ({ key, operator, values: [...vs].sort() })),
  fc.tuple(labelKey, fc.constantFrom<LabelOperator>('exists', '!')).map(([key, operator]) => ({ key, operator, values: [] })),
  fc.tuple(labelKey, fc.constantFrom<LabelOperator>('gt', 'lt'), intValue).map(([key, operator, v]) => ({ key, operator, values: [v] })),
);

const selector: fc.Arbitrary<LabelSelector> = fc
  .array(requirement, { maxLength: 6 })
  .map((rs) => ({ requirements: [...rs].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)) }));

describe('label selector properties', () => {
  it('parse(format(s)) gives s back for any valid selector', () => {
    fc.assert(
      fc.property(selector, (s) => {
        expect(parseLabelSelector(formatLabelSelector(s))).toEqual(s);
      }),
      { numRuns: 500 },
    );
  });

  it('format is a fixed point after one parse, whatever the spacing', () => {
    fc.assert(
      fc.property(selector, fc.constantFrom(' ', '  ', '\t'), (s, ws) => {
        const spaced = formatLabelSelector(s)
          .replace(/,/g, `${ws},${ws}`)
          .replace(/([=<>!])/g, `${ws}$1`);
        const once = formatLabelSelector(parseLabelSelector(spaced.replace(/!\s+=/g, '!=').replace(/=\s+=/g, '==')));
        expect(formatLabelSelector(parseLabelSelector(once))).toBe(once);
      }),
      { numRuns: 200 },
    );
  });

  it('never throws anything but SelectorParseError on arbitrary input', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), (s) => {
        try {
          parseLabelSelector(s);
        } catch (err) {
          expect(err).toBeInstanceOf(SelectorParseError);
          expect((err as SelectorParseError).position).toBeGreaterThanOrEqual(0);
          expect((err as SelectorParseError).position).toBeLessThanOrEqual(s.length);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('a requirement and its negation never both match', () => {
    fc.assert(
      fc.property(labelKey, labelValue, fc.option(labelValue, { nil: undefined }), (key, v, actual) => {
        const labels: Record<string, string> = actual === undefined ? {} : { [key]: actual };
        const eq = labelSelectorMatches({ requirements: [{ key, operator: '=', values: [v] }] }, labels);
        const ne = labelSelectorMatches({ requirements: [{ key, operator: '!=', values: [v] }] }, labels);
        expect(eq).toBe(!ne);
      }),
    );
  });
});

describe('label key and value validation', () => {
  it('accepts qualified names and rejects the rest', () => {
    expect(validateLabelKey('sandbox.cocoonstack.io/node')).toEqual([]);
    expect(validateLabelKey('a')).toEqual([]);
    expect(validateLabelKey('/a')).toEqual(['prefix part must be non-empty']);
    expect(validateLabelKey('a/')).toEqual(['name part must be non-empty']);
    expect(validateLabelKey(`${'a'.repeat(254)}/b`)).toEqual(['prefix part must be no more than 253 characters']);
  });

  it('accepts empty and well-formed values', () => {
    expect(validateLabelValue('')).toEqual([]);
    expect(validateLabelValue('Running')).toEqual([]);
    expect(validateLabelValue('-x')).toHaveLength(1);
  });
});
