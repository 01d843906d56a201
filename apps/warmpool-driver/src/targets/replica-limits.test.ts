import { allotReplicas, NO_REPLICA_LIMITS, type LimitedPool } from './replica-limits';

const pool = (namespace: string, name: string, replicas: number, createdAt?: string): LimitedPool => ({
  id: `${namespace}/${name}`,
  namespace,
  name,
  replicas,
  ...(createdAt !== undefined ? { createdAt } : {}),
});
const limits = { perPool: 1000, perNamespace: 5000 };
const targets = (m: ReturnType<typeof allotReplicas>): Record<string, number> =>
  Object.fromEntries([...m].map(([id, a]) => [id, a.target]));

describe('allotReplicas', () => {
  it('keeps a pool under both limits at its spec.replicas, unlimited', () => {
    const a = allotReplicas([pool('a', 'p', 10)], limits).get('a/p');
    expect(a).toEqual({ requested: 10, target: 10, limits, takenBefore: 0 });
  });

  it('clamps spec.replicas to the per-pool limit and says so', () => {
    const a = allotReplicas([pool('a', 'p', 1_000_000)], limits).get('a/p');
    expect(a).toMatchObject({ requested: 1_000_000, target: 1000, limitedBy: 'pool' });
  });

  it("serves a namespace's pools oldest first, each up to the per-pool limit, until the namespace limit is used", () => {
    const m = allotReplicas(
      [
        pool('a', 'newest', 900, '2030-01-01T00:00:09Z'),
        pool('a', 'old', 1_000_000, '2030-01-01T00:00:01Z'),
        pool('a', 'mid', 1_000_000, '2030-01-01T00:00:05Z'),
      ],
      { perPool: 64, perNamespace: 100 },
    );
    expect(targets(m)).toEqual({ 'a/old': 64, 'a/mid': 36, 'a/newest': 0 });
    expect(m.get('a/old')?.limitedBy).toBe('pool');
    expect(m.get('a/mid')).toMatchObject({ limitedBy: 'namespace', takenBefore: 64 });
    expect(m.get('a/newest')).toMatchObject({ limitedBy: 'namespace', takenBefore: 100, requested: 900 });
  });

  it('breaks a creation-time tie by name, and puts a pool without a creation time last', () => {
    const m = allotReplicas(
      [pool('a', 'b', 10, '2030-01-01T00:00:00Z'), pool('a', 'undated', 10), pool('a', 'a', 10, '2030-01-01T00:00:00Z')],
      { perPool: 0, perNamespace: 15 },
    );
    expect(targets(m)).toEqual({ 'a/a': 10, 'a/b': 5, 'a/undated': 0 });
  });

  it('agrees with itself whatever order the cache lists the pools in', () => {
    const pools = Array.from({ length: 12 }, (_, i) => pool('a', `p${i}`, 7 + i, `2030-01-01T00:00:0${i % 3}Z`));
    const first = targets(allotReplicas(pools, { perPool: 15, perNamespace: 60 }));
    expect(targets(allotReplicas([...pools].reverse(), { perPool: 15, perNamespace: 60 }))).toEqual(first);
    expect(Object.values(first).reduce((x, y) => x + y, 0)).toBe(60);
  });

  it('keeps each namespace to its own limit: one full namespace leaves another untouched', () => {
    const m = allotReplicas([pool('busy', 'p', 1_000_000), pool('busy', 'q', 1_000_000), pool('other', 'p', 40)], {
      perPool: 64,
      perNamespace: 96,
    });
    expect(targets(m)).toEqual({ 'busy/p': 64, 'busy/q': 32, 'other/p': 40 });
    expect(m.get('other/p')?.limitedBy).toBeUndefined();
  });

  it("hands a shrunk pool's share on to the next pool of the namespace", () => {
    const before = allotReplicas([pool('a', 'a', 50, '2030-01-01T00:00:00Z'), pool('a', 'b', 50, '2030-01-01T00:00:01Z')], {
      perPool: 0,
      perNamespace: 60,
    });
    expect(targets(before)).toEqual({ 'a/a': 50, 'a/b': 10 });
    const after = allotReplicas([pool('a', 'a', 5, '2030-01-01T00:00:00Z'), pool('a', 'b', 50, '2030-01-01T00:00:01Z')], {
      perPool: 0,
      perNamespace: 60,
    });
    expect(targets(after)).toEqual({ 'a/a': 5, 'a/b': 50 });
    expect(after.get('a/b')?.limitedBy).toBeUndefined();
  });

  it('limits nothing with both limits 0', () => {
    const m = allotReplicas([pool('a', 'p', 2_147_483_647), pool('a', 'q', 2_147_483_647)], NO_REPLICA_LIMITS);
    expect(targets(m)).toEqual({ 'a/p': 2_147_483_647, 'a/q': 2_147_483_647 });
    expect([...m.values()].every((a) => a.limitedBy === undefined)).toBe(true);
  });
});
