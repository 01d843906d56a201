import { ObjectStore } from './object-store';

describe('ObjectStore.list', () => {
  it('hands out the same frozen array until the store changes, then one with the change', () => {
    const s = new ObjectStore<{ n: string }>();
    s.upsert('a', 'x', { n: 'x' }, '1');
    s.upsert('b', 'y', { n: 'y' }, '1');
    const all = s.list();
    expect(all.map((o) => o.n)).toEqual(['x', 'y']);
    expect(Object.isFrozen(all)).toBe(true);
    expect(s.list()).toBe(all);
    expect(s.list('a').map((o) => o.n)).toEqual(['x']);
    // an unchanged resourceVersion is no change
    s.upsert('a', 'x', { n: 'x' }, '1');
    expect(s.list()).toBe(all);
    s.upsert('a', 'z', { n: 'z' }, '2');
    expect(s.list().map((o) => o.n)).toEqual(['x', 'z', 'y']);
    expect(s.list('a').map((o) => o.n)).toEqual(['x', 'z']);
    s.remove('b', 'y');
    expect(s.list().map((o) => o.n)).toEqual(['x', 'z']);
    expect(s.list('b')).toEqual([]);
    expect(all.map((o) => o.n)).toEqual(['x', 'y']);
  });
});
