import { coldCandidates, type ColdInventoryLike } from './cold-candidates';

const inv = (name: string, o: Partial<ColdInventoryLike> = {}): ColdInventoryLike => ({
  metadata: { name },
  node: name,
  address: `${name}:7777`,
  ...o,
});
const entries = (n: number): unknown[] => Array.from({ length: n }, (_, i) => ({ name: `ns/s${i}` }));

describe('coldCandidates', () => {
  it('orders routable nodes by fewest live entries, then by name', () => {
    const got = coldCandidates([
      inv('c', { entries: entries(3) }),
      inv('b', { entries: entries(1) }),
      inv('a', { entries: entries(1) }),
      inv('d'),
    ]);
    expect(got.map((c) => [c.node, c.live])).toEqual([
      ['d', 0],
      ['a', 1],
      ['b', 1],
      ['c', 3],
    ]);
    expect(got[0]?.addr).toBe('d:7777');
  });

  it('leaves out nodes without an address and Stale or Draining nodes, but not ones whose condition is False', () => {
    const got = coldCandidates([
      inv('no-addr', { address: '' }),
      inv('stale', { conditions: [{ type: 'Stale', status: 'True' }] }),
      inv('draining', { conditions: [{ type: 'Draining', status: 'True' }] }),
      inv('ok', { entries: entries(5), conditions: [{ type: 'Draining', status: 'False' }] }),
    ]);
    expect(got.map((c) => c.node)).toEqual(['ok']);
  });

  it('puts nodes cooling down after a failed call last, however idle', () => {
    const got = coldCandidates([inv('idle'), inv('busy', { entries: entries(9) })], (n) => n === 'idle');
    expect(got.map((c) => c.node)).toEqual(['busy', 'idle']);
  });

  it('returns nothing for an empty fleet', () => {
    expect(coldCandidates([])).toEqual([]);
  });
});
