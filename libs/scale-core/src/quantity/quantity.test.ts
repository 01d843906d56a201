import fc from 'fast-check';
import { compareQuantities, parseQuantity, QuantityParseError, tryParseQuantity } from './quantity';

const value = (s: string | number): string => {
  const q = parseQuantity(s);
  return `${q.num}/${q.den}`;
};

describe('parseQuantity', () => {
  it.each([
    ['1', '1/1'],
    ['1500m', '1500/1000'],
    ['1.5', '15/10'],
    ['.5', '5/10'],
    ['5.', '5/1'],
    ['+2', '2/1'],
    ['-2', '-2/1'],
    ['2Gi', '2147483648/1'],
    ['2049Mi', `${2049n * 2n ** 20n}/1`],
    ['8G', '8000000000/1'],
    ['1k', '1000/1'],
    ['1e3', '1000/1'],
    ['1E3', '1000/1'],
    ['5e-2', '5/100'],
    ['1e+2', '100/1'],
    ['1E', `${10n ** 18n}/1`],
    ['1Ei', `${2n ** 60n}/1`],
    ['250u', '250/1000000'],
    ['3n', '3/1000000000'],
    ['0.5Gi', `${5n * 2n ** 30n}/10`],
    [2, '2/1'],
    [0.25, '25/100'],
  ])('reads %p exactly', (input, expected) => {
    expect(value(input)).toBe(expected);
  });

  it.each(['', 'abc', '1K', '1 Gi', 'Gi', '.', '1e', '1e3.5', '1ee3', '1Gii', '--1', '1e99999', ' 1'])(
    'rejects %p with a QuantityParseError',
    (input) => {
      expect(() => parseQuantity(input)).toThrow(QuantityParseError);
      expect(tryParseQuantity(input)).toBeUndefined();
    },
  );

  it('says where the quantity broke', () => {
    try {
      parseQuantity('12Q');
      throw new Error('expected a parse error');
    } catch (err) {
      expect(err).toBeInstanceOf(QuantityParseError);
      expect((err as QuantityParseError).position).toBe(2);
      expect((err as Error).message).toContain('unknown suffix "Q"');
    }
  });
});

describe('compareQuantities', () => {
  const cmp = (a: string, b: string): number => compareQuantities(parseQuantity(a), parseQuantity(b));

  it('compares across suffixes exactly', () => {
    expect(cmp('1000m', '1')).toBe(0);
    expect(cmp('1001m', '1')).toBe(1);
    expect(cmp('2049Mi', '2Gi')).toBe(1);
    expect(cmp('2048Mi', '2Gi')).toBe(0);
    expect(cmp('2G', '2Gi')).toBe(-1);
    expect(cmp('8Gi', '8589934592')).toBe(0);
    expect(cmp('8589934593', '8Gi')).toBe(1);
    expect(cmp('1e3', '1k')).toBe(0);
    expect(cmp('0.1', '100m')).toBe(0);
    expect(cmp('-1', '0')).toBe(-1);
  });

  it('agrees with integer arithmetic for any milli-value (property)', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 15n }), fc.bigInt({ min: 0n, max: 10n ** 15n }), (a, b) => {
        const expected = a < b ? -1 : a > b ? 1 : 0;
        expect(compareQuantities(parseQuantity(`${a}m`), parseQuantity(`${b}m`))).toBe(expected);
      }),
    );
  });

  it('reads the same value whatever the spelling (property)', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 12n }), (n) => {
        const bytes = parseQuantity(`${n * 1024n}`);
        expect(compareQuantities(parseQuantity(`${n}Ki`), bytes)).toBe(0);
        expect(compareQuantities(parseQuantity(`${n}e3`), parseQuantity(`${n}k`))).toBe(0);
      }),
    );
  });
});
