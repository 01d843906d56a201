import { TtlLru } from './ttl-lru';

describe('TtlLru', () => {
  it('forgets an entry once its time is up', () => {
    let now = 0;
    const c = new TtlLru<string, number>(10, 100, () => now);
    c.set('a', 1);
    now = 99;
    expect(c.get('a')).toBe(1);
    now = 100;
    expect(c.get('a')).toBeUndefined();
    expect(c.size).toBe(0);
  });

  it('stays within its bound by evicting the least recently used entry, one at a time', () => {
    const c = new TtlLru<string, number>(3, 1000, () => 0);
    c.set('hot', 1);
    for (let i = 0; i < 10_000; i++) {
      c.set(`flood-${i}`, i);
      // a key in use keeps its place however many new keys arrive
      expect(c.get('hot')).toBe(1);
    }
    expect(c.size).toBe(3);
    expect(c.get('flood-9999')).toBe(9999);
    expect(c.get('flood-9997')).toBeUndefined();
  });

  it('lets go of expired entries nobody reads again as new ones arrive', () => {
    let now = 0;
    const c = new TtlLru<string, number>(100_000, 100, () => now);
    for (let i = 0; i < 1000; i++) c.set(`old-${i}`, i);
    now = 50;
    c.set('young', 1);
    expect(c.size).toBe(1001);
    now = 100;
    c.set('new', 2);
    expect(c.size).toBe(2);
    expect(c.get('young')).toBe(1);
    expect(c.get('new')).toBe(2);
  });

  it('caches nothing with a zero TTL and refuses a non-positive bound', () => {
    const c = new TtlLru<string, number>(3, 0, () => 0);
    c.set('a', 1);
    expect(c.get('a')).toBeUndefined();
    expect(() => new TtlLru(0, 10)).toThrow(RangeError);
  });
});
