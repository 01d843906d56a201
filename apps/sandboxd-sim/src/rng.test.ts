import { createRng, nodeSeed } from './rng';

describe('seeded rng', () => {
  it('repeats a sequence for a seed and differs across seeds', () => {
    const a = createRng(7);
    const b = createRng(7);
    const c = createRng(8);
    const seqA = Array.from({ length: 5 }, () => a.next());
    expect(Array.from({ length: 5 }, () => b.next())).toEqual(seqA);
    expect(Array.from({ length: 5 }, () => c.next())).not.toEqual(seqA);
  });

  it('draws uniformly enough and normals around 0', () => {
    const r = createRng(1);
    const xs = Array.from({ length: 20_000 }, () => r.next());
    expect(Math.min(...xs)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...xs)).toBeLessThan(1);
    expect(xs.reduce((s, x) => s + x, 0) / xs.length).toBeCloseTo(0.5, 1);
    const ns = Array.from({ length: 20_000 }, () => r.normal());
    expect(ns.reduce((s, x) => s + x, 0) / ns.length).toBeCloseTo(0, 1);
  });

  it('gives each node of a run its own seed', () => {
    const seeds = new Set(Array.from({ length: 400 }, (_, i) => nodeSeed(1, i)));
    expect(seeds.size).toBe(400);
  });
});

describe('ids', () => {
  it('are the prefix plus 16 hex digits, reproducible per seed', () => {
    const a = createRng(3);
    const b = createRng(3);
    const ids = Array.from({ length: 100 }, () => a.id('sb_'));
    expect(ids.every((id) => /^sb_[0-9a-f]{16}$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(100);
    expect(Array.from({ length: 100 }, () => b.id('sb_'))).toEqual(ids);
  });
});
