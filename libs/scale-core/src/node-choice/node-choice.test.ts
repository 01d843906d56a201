import fc from 'fast-check';
import { CapacityLedger } from './capacity-ledger';
import { seededRng, type Rng } from './random';
import { poolKeyMatches } from '../pool-key/pool-key';
import { pickPowerOfTwo, warmCandidates, type InventoryLike } from './warm-candidates';

const inv = (node: string, pools: InventoryLike['pools'], extra: Partial<InventoryLike> = {}): InventoryLike => ({
  metadata: { name: node },
  node,
  address: `10.0.0.${node.replace(/\D/g, '') || '9'}:7777`,
  pools,
  ...extra,
});
const key = { template: 'img', net: 'none', size: 'small' };
/** An rng that returns the given numbers in turn. */
const scripted = (...values: number[]): Rng => {
  let i = 0;
  return () => values[i++ % values.length] ?? 0;
};

describe('warmCandidates', () => {
  it('routes to a warm node at its address', () => {
    expect(warmCandidates([inv('n2', [{ template: 'img', warm: 4 }], { address: '10.0.0.2:7777' })], { template: 'img' })).toEqual([
      { node: 'n2', addr: '10.0.0.2:7777', warm: 4 },
    ]);
  });

  it('has no candidates when nothing is warm', () => {
    expect(warmCandidates([inv('n1', [{ template: 'img', warm: 0 }]), inv('n2', [])], key)).toEqual([]);
  });

  it('matches pools advertised without net and size, and not another net', () => {
    const fleet = [inv('n1', [{ template: 'img', warm: 2 }])];
    expect(warmCandidates(fleet, { template: 'img', net: 'none', size: 'small' })).toHaveLength(1);
    expect(warmCandidates(fleet, { template: 'img', net: 'egress' })).toEqual([]);
  });

  it('skips nodes without an address', () => {
    expect(
      warmCandidates(
        [inv('n1', [{ template: 'img', warm: 2 }], { address: '' }), inv('n2', [{ template: 'img', warm: 2 }], { address: undefined })],
        key,
      ),
    ).toEqual([]);
  });

  it('merges pools of one node that normalise to the same key, so the node is tried once', () => {
    const c = warmCandidates(
      [
        inv('n1', [
          { template: 'img', net: '', warm: 2 },
          { template: 'img', net: 'none', size: 'small', warm: 3 },
          { template: 'img', net: 'egress', warm: 9 },
        ]),
      ],
      key,
    );
    expect(c).toEqual([{ node: 'n1', addr: '10.0.0.1:7777', warm: 5 }]);
  });

  it('names candidates by metadata.name, which routing resolves by', () => {
    expect(
      warmCandidates([{ metadata: { name: 'listed' }, node: 'other', address: 'a:1', pools: [{ template: 'img', warm: 1 }] }], key)[0]
        ?.node,
    ).toBe('listed');
  });
});

describe('pickPowerOfTwo', () => {
  it('returns -1 for no candidates and 0 for one, without drawing', () => {
    const rng = jest.fn(() => 0.5);
    expect(pickPowerOfTwo([], rng)).toBe(-1);
    expect(pickPowerOfTwo([{ warm: 1 }], rng)).toBe(0);
    expect(rng).not.toHaveBeenCalled();
  });

  it('takes the second draw only when it is strictly warmer; ties go to the first', () => {
    const c = [{ warm: 1 }, { warm: 5 }, { warm: 5 }];
    expect(pickPowerOfTwo(c, scripted(0, 0.5))).toBe(1);
    expect(pickPowerOfTwo(c, scripted(0.5, 0))).toBe(1);
    expect(pickPowerOfTwo(c, scripted(0.5, 0.9))).toBe(1);
    expect(pickPowerOfTwo(c, scripted(0.9, 0.5))).toBe(2);
  });

  it('draws with replacement, so both draws may be the same index', () => {
    expect(pickPowerOfTwo([{ warm: 1 }, { warm: 9 }], scripted(0.1, 0.2))).toBe(0);
  });

  it('copes with an rng that returns exactly 1', () => {
    expect(pickPowerOfTwo([{ warm: 1 }, { warm: 2 }], () => 1)).toBe(1);
  });

  it('spreads picks over equally warm nodes', () => {
    const c = [{ warm: 4 }, { warm: 4 }, { warm: 4 }, { warm: 4 }];
    const rng = seededRng(14);
    const hits = new Set<number>();
    for (let i = 0; i < 200; i++) hits.add(pickPowerOfTwo(c, rng));
    expect([...hits].sort()).toEqual([0, 1, 2, 3]);
  });

  it('prefers the warmer node about three times in four', () => {
    const c = [{ warm: 1 }, { warm: 100 }];
    const rng = seededRng(15);
    let warm = 0;
    for (let i = 0; i < 200; i++) if (pickPowerOfTwo(c, rng) === 1) warm++;
    expect(warm).toBeGreaterThan(130);
    expect(warm).toBeLessThan(190);
  });
});

describe('CapacityLedger', () => {
  it('spreads a burst within one publish window by what each node has left', () => {
    // Without local decrements the sampler keeps preferring n1 (10 > 9) for the whole burst.
    const ledger = new CapacityLedger();
    const fleet = [inv('n1', [{ template: 'img', warm: 10 }]), inv('n2', [{ template: 'img', warm: 9 }])];
    const rng = seededRng(1);
    const counts = new Map<string, number>();
    for (let i = 0; i < 19; i++) {
      const c = ledger.choose(fleet, key, rng);
      if (c === undefined) throw new Error('ran out of capacity');
      counts.set(c.node, (counts.get(c.node) ?? 0) + 1);
    }
    expect(Object.fromEntries(counts)).toEqual({ n1: 10, n2: 9 });
    expect(ledger.choose(fleet, key, rng)).toBeUndefined();
  });

  it('runs dry after handing out everything advertised, until a newer inventory arrives', () => {
    const ledger = new CapacityLedger();
    const v1 = [inv('n1', [{ template: 'img', warm: 2 }], { metadata: { name: 'n1', resourceVersion: '10' } })];
    const rng = seededRng(2);
    expect(ledger.choose(v1, key, rng)?.node).toBe('n1');
    expect(ledger.candidates(v1, key)).toEqual([expect.objectContaining({ warm: 1 })]);
    expect(ledger.choose(v1, key, rng)?.node).toBe('n1');
    expect(ledger.choose(v1, key, rng)).toBeUndefined();
    const v2 = [inv('n1', [{ template: 'img', warm: 2 }], { metadata: { name: 'n1', resourceVersion: '11' } })];
    expect(ledger.candidates(v2, key)).toEqual([expect.objectContaining({ warm: 2 })]);
  });

  it('lets counts lapse against an inventory that stops changing: a node refilled to its published count publishes nothing new', () => {
    let t = 0;
    const ledger = new CapacityLedger({ maxAgeMs: 10_000, now: () => t });
    const v1 = [inv('n1', [{ template: 'img', warm: 2 }], { metadata: { name: 'n1', resourceVersion: '10' } })];
    ledger.choose(v1, key, seededRng(7));
    ledger.exhaust('n1', key);
    t = 10_000;
    expect(ledger.candidates(v1, key)).toEqual([]);
    t = 10_001;
    expect(ledger.candidates(v1, key)).toEqual([expect.objectContaining({ warm: 2 })]);
    // a 429 after the lapse empties it again, for another whole lapse
    ledger.exhaust('n1', key);
    t = 20_000;
    expect(ledger.candidates(v1, key)).toEqual([]);
  });

  it('ignores an older copy of an inventory', () => {
    const ledger = new CapacityLedger();
    const at = (rv: string): InventoryLike[] => [
      inv('n1', [{ template: 'img', warm: 1 }], { metadata: { name: 'n1', resourceVersion: rv } }),
    ];
    ledger.choose(at('20'), key, seededRng(3));
    expect(ledger.candidates(at('19'), key)).toEqual([]);
    expect(ledger.candidates(at('21'), key)).toHaveLength(1);
  });

  it('resets on changed pools when inventories carry no resourceVersion', () => {
    const ledger = new CapacityLedger();
    ledger.choose([inv('n1', [{ template: 'img', warm: 1 }])], key, seededRng(4));
    expect(ledger.candidates([inv('n1', [{ template: 'img', warm: 1 }])], key)).toEqual([]);
    expect(ledger.candidates([inv('n1', [{ template: 'img', warm: 5 }])], key)).toEqual([expect.objectContaining({ warm: 5 })]);
  });

  it('drops a node that answered at capacity and falls back to the next', () => {
    const ledger = new CapacityLedger();
    const fleet = [inv('n1', [{ template: 'img', warm: 3 }]), inv('n2', [{ template: 'img', warm: 3 }])];
    const rng = seededRng(5);
    const tried: string[] = [];
    for (;;) {
      const c = ledger.choose(fleet, key, rng);
      if (c === undefined) break;
      tried.push(c.node);
      ledger.exhaust(c.node, key); // both nodes raced to zero
    }
    expect(tried.sort()).toEqual(['n1', 'n2']);
  });

  it('gives the capacity back when a claim failed for another reason', () => {
    const ledger = new CapacityLedger();
    const fleet = [inv('n1', [{ template: 'img', warm: 1 }])];
    const c = ledger.choose(fleet, key, seededRng(6));
    expect(ledger.candidates(fleet, key)).toEqual([]);
    ledger.putBack(c?.node ?? '', key);
    expect(ledger.candidates(fleet, key)).toEqual([expect.objectContaining({ warm: 1 })]);
  });

  it('chooses for each key asked in turn, loose or normalised, never for the key asked before', () => {
    const ledger = new CapacityLedger();
    const fleet = [inv('n1', [{ template: 'img', warm: 1 }]), inv('n2', [{ template: 'img', size: 'large', warm: 1 }])];
    const rng = seededRng(8);
    expect(ledger.choose(fleet, { template: 'img', size: 'large' }, rng)?.node).toBe('n2');
    // the same key in its normalised form, then a loose key normalising to another one
    expect(ledger.choose(fleet, { template: 'img', net: 'none', size: 'large' }, rng)).toBeUndefined();
    expect(ledger.choose(fleet, { template: 'img' }, rng)?.node).toBe('n1');
    expect(ledger.choose(fleet, key, rng)).toBeUndefined();
  });

  it('counts keys separately and forgets nodes that left the fleet', () => {
    const ledger = new CapacityLedger();
    const fleet = [
      inv('n1', [
        { template: 'img', warm: 1 },
        { template: 'other', warm: 1 },
      ]),
      inv('n2', []),
    ];
    ledger.choose(fleet, key, seededRng(7));
    expect(ledger.candidates(fleet, { template: 'other' })).toHaveLength(1);
    expect(ledger.size).toBe(2);
    ledger.candidates([fleet[0] as InventoryLike], key);
    expect(ledger.size).toBe(1);
  });

  it('forgets a node absent from one list even when another name is listed twice', () => {
    const ledger = new CapacityLedger();
    const n1 = (rv: string): InventoryLike => inv('n1', [{ template: 'img', warm: 2 }], { metadata: { name: 'n1', resourceVersion: rv } });
    const n2 = inv('n2', [{ template: 'img', warm: 2 }]);
    ledger.candidates([n1('1'), n2], key);
    expect(ledger.size).toBe(2);
    // two copies of n1 (the second newer) and no n2: n2 must go, n1 is tracked once
    ledger.candidates([n1('1'), n1('2')], key);
    expect(ledger.size).toBe(1);
    expect(ledger.candidates([n1('2'), n2], key).map((c) => c.node)).toEqual(['n1', 'n2']);
  });

  it('keeps counts across claims against an unchanged list, and resets them at a newer version of the same object list', () => {
    const ledger = new CapacityLedger();
    const fleet = [inv('n1', [{ template: 'img', warm: 3 }], { metadata: { name: 'n1', resourceVersion: '7' } })];
    ledger.choose(fleet, key, seededRng(8));
    ledger.choose(fleet, key, seededRng(8));
    expect(ledger.candidates(fleet, key)).toEqual([expect.objectContaining({ warm: 1 })]);
    fleet[0] = inv('n1', [{ template: 'img', warm: 3 }], { metadata: { name: 'n1', resourceVersion: '8' } });
    expect(ledger.candidates(fleet, key)).toEqual([expect.objectContaining({ warm: 3 })]);
  });
});

/** A list as an informer cache hands it out: frozen all the way down, the same array until it changes. */
function frozen(list: InventoryLike[]): readonly InventoryLike[] {
  for (const i of list) {
    for (const p of i.pools ?? []) Object.freeze(p);
    Object.freeze(i.pools);
    Object.freeze(i.metadata);
    Object.freeze(i);
  }
  return Object.freeze(list);
}

describe('CapacityLedger over a frozen list it chooses from again without walking it', () => {
  it('keeps the counts a walk would, choosing only nodes with something left, through takes, exhausts, put-backs and lapses', () => {
    // the same operations on two ledgers: one given the frozen list (chooses without walking once
    // synced), one given a plain copy of it every time (walks on every call); the frozen one's
    // choice is applied to the other as a take, so their counts must agree after every step
    const op = fc.oneof(
      fc.record({ kind: fc.constant('choose' as const) }),
      fc.record({ kind: fc.constant('exhaust' as const), node: fc.nat(5) }),
      fc.record({ kind: fc.constant('putBack' as const), node: fc.nat(5) }),
      fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 6_000 }) }),
    );
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 4 }), { minLength: 1, maxLength: 6 }),
        fc.array(op, { maxLength: 60 }),
        fc.nat(),
        (warms, ops, seed) => {
          let t = 0;
          const now = (): number => t;
          const fast = new CapacityLedger({ maxAgeMs: 10_000, now });
          const walked = new CapacityLedger({ maxAgeMs: 10_000, now });
          const make = (): InventoryLike[] =>
            warms.map((w, i) =>
              inv(
                `n${i}`,
                [
                  { template: 'img', warm: w },
                  { template: 'other', warm: 1 },
                ],
                { metadata: { name: `n${i}`, resourceVersion: '1' } },
              ),
            );
          const list = frozen(make());
          const rng = seededRng(seed);
          const counts = (l: CapacityLedger, of: readonly InventoryLike[]): Record<string, number> =>
            Object.fromEntries(l.candidates(of, key).map((c) => [c.node, c.warm]));
          for (const o of ops) {
            if (o.kind === 'choose') {
              const before = counts(walked, make());
              const c = fast.choose(list, key, rng);
              if (c === undefined) expect(before).toEqual({});
              else {
                expect(before[c.node]).toBeGreaterThan(0);
                expect(c.warm).toBe(before[c.node]);
                walked.take(c.node, key, 1);
              }
            } else if (o.kind === 'exhaust') {
              fast.exhaust(`n${o.node}`, key);
              walked.exhaust(`n${o.node}`, key);
            } else if (o.kind === 'putBack') {
              fast.putBack(`n${o.node}`, key);
              walked.putBack(`n${o.node}`, key);
            } else t += o.ms;
            // read through choose's own path too: a choose of another key against the frozen list
            fast.choose(list, { template: 'absent' }, rng);
            expect(counts(fast, list)).toEqual(counts(walked, make()));
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('prefers the warmer of two nodes about three times in four, as the walk does', () => {
    const list = frozen([inv('n1', [{ template: 'img', warm: 1_000 }]), inv('n2', [{ template: 'img', warm: 100_000 }])]);
    const ledger = new CapacityLedger();
    const rng = seededRng(15);
    let warm = 0;
    for (let i = 0; i < 400; i++) if (ledger.choose(list, key, rng)?.node === 'n2') warm++;
    expect(warm).toBeGreaterThan(260);
    expect(warm).toBeLessThan(380);
  });

  it('finds the one node left among dry ones, and nothing once it is dry too', () => {
    const list = frozen(Array.from({ length: 50 }, (_, i) => inv(`n${i}`, [{ template: 'img', warm: i === 37 ? 2 : 1 }])));
    const ledger = new CapacityLedger();
    const rng = seededRng(9);
    // synced first (a node the ledger does not know yet has no count to empty), then all but one emptied
    ledger.candidates(list, key);
    for (let i = 0; i < 50; i++) if (i !== 37) ledger.exhaust(`n${i}`, key);
    expect(ledger.choose(list, key, rng)?.node).toBe('n37');
    expect(ledger.choose(list, key, rng)?.node).toBe('n37');
    expect(ledger.choose(list, key, rng)).toBeUndefined();
  });

  it('lets counts lapse against a frozen list that stops changing, as against a walked one', () => {
    let t = 0;
    const ledger = new CapacityLedger({ maxAgeMs: 10_000, now: () => t });
    // one node emptied among ten: no run of draws lands on it often enough to make the ledger walk
    const list = frozen(Array.from({ length: 10 }, (_, i) => inv(`n${i}`, [{ template: 'img', warm: 1_000 }])));
    const rng = seededRng(21);
    ledger.choose(list, key, rng);
    ledger.exhaust('n0', key);
    const chosen = (): string[] => Array.from({ length: 60 }, () => ledger.choose(list, key, rng)?.node ?? '');
    expect(chosen()).not.toContain('n0');
    // a walk halfway keeps the lapse where it was: n0's counts were taken against t = 0
    t = 5_000;
    ledger.candidates(list, key);
    expect(chosen()).not.toContain('n0');
    // n0 refilled and publishes nothing new: after the lapse it is chosen again
    t = 10_001;
    expect(chosen()).toContain('n0');
  });

  it('walks the list again when it is another array, even with the same nodes', () => {
    const ledger = new CapacityLedger();
    const v1 = frozen([inv('n1', [{ template: 'img', warm: 1 }], { metadata: { name: 'n1', resourceVersion: '1' } })]);
    expect(ledger.choose(v1, key, seededRng(1))?.node).toBe('n1');
    expect(ledger.choose(v1, key, seededRng(1))).toBeUndefined();
    // the node republished: a new list from the cache, a newer version, the counts start again
    const v2 = frozen([inv('n1', [{ template: 'img', warm: 1 }], { metadata: { name: 'n1', resourceVersion: '2' } })]);
    expect(ledger.choose(v2, key, seededRng(1))?.node).toBe('n1');
  });
});

describe('warmCandidates matches pools as poolKeyMatches does', () => {
  it.each([
    [{ template: 'img' }, { template: 'img', net: 'none', size: 'small' }, true],
    [{ template: 'img', net: '', size: '' }, { template: 'img' }, true],
    [{ template: 'img', size: 'large' }, { template: 'img' }, false],
    [{ template: 'img', net: 'egress' }, { template: 'img', net: 'egress', size: 'small' }, true],
    [{ template: 'Img' }, { template: 'img' }, false],
  ])('pool %j serves %j: %s', (pool, requested, serves) => {
    expect(warmCandidates([inv('n1', [{ ...pool, warm: 1 }])], requested)).toHaveLength(serves ? 1 : 0);
    expect(poolKeyMatches(pool, requested)).toBe(serves);
  });
});
