import type { Row } from './sandbox-cache';
import { lowerBound, SortedRows, sortKeyOf, upperBound } from './sorted-rows';

const row = (key: string, rev = 1): Row => ({
  key,
  node: 'n',
  entry: { name: key, phase: 'Running' },
  fingerprint: '',
  rev,
  seenAt: '',
  proven: true,
});

describe('SortedRows', () => {
  it('keeps namespace-then-name order across inserts, replacements and deletes', () => {
    const s = new SortedRows();
    for (const k of ['b/x', 'a-b/y', 'a/z', 'a/a']) s.set(row(k));
    const first = s.snapshot();
    expect(first.rows.map((r) => r.key)).toEqual(['a/a', 'a/z', 'a-b/y', 'b/x']);
    s.delete('a/z');
    s.set(row('a/m'));
    s.set(row('b/x', 2));
    const second = s.snapshot();
    expect(second.rows.map((r) => `${r.key}@${r.rev}`)).toEqual(['a/a@1', 'a/m@1', 'a-b/y@1', 'b/x@2']);
    // the earlier snapshot is untouched: pages already promised from it stay valid
    expect(first.rows.map((r) => r.key)).toEqual(['a/a', 'a/z', 'a-b/y', 'b/x']);
    expect(second.keys).toEqual(second.rows.map((r) => r.key.replace('/', '\u0000')));
  });

  it('returns the same snapshot while nothing changed', () => {
    const s = new SortedRows();
    s.set(row('a/x'));
    const a = s.snapshot();
    expect(s.dirty).toBe(false);
    expect(s.snapshot()).toBe(a);
    s.set(row('a/y'));
    expect(s.dirty).toBe(true);
    expect(s.snapshot()).not.toBe(a);
  });

  it('binary searches bounds', () => {
    const keys = ['a', 'b', 'b', 'd'];
    expect([lowerBound(keys, 'b'), upperBound(keys, 'b'), lowerBound(keys, 'c'), upperBound(keys, 'z'), lowerBound(keys, '')]).toEqual([
      1, 3, 3, 4, 0,
    ]);
    expect(sortKeyOf('a', 'x') < sortKeyOf('a-b', 'a')).toBe(true);
  });
});
