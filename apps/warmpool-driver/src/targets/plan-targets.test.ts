import { poolKeyFor } from '@sandbox-scale/scale-core';
import { planTargets, spreadReplicas, type PlanNode } from './plan-targets';

const nodes = (n: number): PlanNode[] => Array.from({ length: n }, (_, i) => ({ name: `node-${String(i).padStart(2, '0')}` }));
const sum = (m: Map<string, number>): number => [...m.values()].reduce((a, b) => a + b, 0);
const key = (image: string) => poolKeyFor([{ image }], undefined);

describe('spreadReplicas', () => {
  it('spreads 1000 over 7 nodes exactly: sum 1000, max - min <= 1', () => {
    const t = spreadReplicas(1000, nodes(7), 'ns/p');
    expect(sum(t)).toBe(1000);
    expect(Math.max(...t.values()) - Math.min(...t.values())).toBeLessThanOrEqual(1);
    expect(t.size).toBe(7);
  });

  it('rotates the remainder by pool, so it does not always land on the first nodes', () => {
    const firsts = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const t = spreadReplicas(1, nodes(5), `ns/pool-${i}`);
      firsts.add([...t.entries()].find(([, v]) => v === 1)?.[0] ?? '');
    }
    expect(firsts.size).toBeGreaterThan(2);
  });

  it('is stable for a pool: the same input gives the same targets', () => {
    expect(spreadReplicas(11, nodes(4), 'ns/a')).toEqual(spreadReplicas(11, nodes(4), 'ns/a'));
  });

  it('weights by reported capacity and still sums exactly', () => {
    const t = spreadReplicas(
      100,
      [
        { name: 'a', weight: 3 },
        { name: 'b', weight: 1 },
      ],
      'x',
    );
    expect(t.get('a')).toBe(75);
    expect(t.get('b')).toBe(25);
    const u = spreadReplicas(10, [{ name: 'a', weight: 2 }, { name: 'b', weight: 1 }, { name: 'c' }], 'y');
    expect(sum(u)).toBe(10);
    expect(u.get('a')).toBeGreaterThanOrEqual(5);
  });

  it('gives nothing with no nodes and zeros for zero or negative replicas', () => {
    expect(spreadReplicas(5, [], 'x').size).toBe(0);
    expect([...spreadReplicas(-3, nodes(3), 'x').values()]).toEqual([0, 0, 0]);
  });
});

describe('planTargets', () => {
  it('composes the full pool set per node: every key on every node, same keys summed, sorted', () => {
    const plan = planTargets({
      pools: [
        { id: 'ns/p1', key: key('img:b'), replicas: 3 },
        { id: 'ns/p2', key: key('img:b'), replicas: 5 },
        { id: 'ns/p3', key: key('img:a'), replicas: 1 },
      ],
      held: [],
      nodes: nodes(2),
    });
    for (const specs of plan.byNode.values()) {
      expect(specs.map((s) => s.template)).toEqual(['img:a', 'img:b']);
    }
    const warmOf = (t: string): number =>
      [...plan.byNode.values()].flatMap((s) => s.filter((x) => x.template === t)).reduce((a, s) => a + s.warm, 0);
    expect(warmOf('img:b')).toBe(8);
    expect(warmOf('img:a')).toBe(1);
    expect([...plan.byNode.values()].every((s) => s.length === 2)).toBe(true);
  });

  it('keeps a held pool at its last targets, whatever the node count now', () => {
    const held = {
      id: 'ns/h',
      key: key('img:h'),
      targets: new Map([
        ['node-00', 4],
        ['node-01', 4],
      ]),
    };
    const plan = planTargets({ pools: [], held: [held], nodes: nodes(3) });
    expect(plan.byPool.get('ns/h')).toEqual(held.targets);
    expect(plan.byNode.get('node-00')).toEqual([{ template: 'img:h', net: 'none', size: 'small', warm: 4 }]);
    expect(plan.byNode.get('node-02')).toEqual([{ template: 'img:h', net: 'none', size: 'small', warm: 0 }]);
  });

  it('sends every node an empty set when no pool remains (a deleted pool drains)', () => {
    const plan = planTargets({ pools: [], held: [], nodes: nodes(2) });
    expect([...plan.byNode.values()]).toEqual([[], []]);
  });
});
