import { ownerOf } from './rendezvous';

const keys = Array.from({ length: 3000 }, (_, i) => `team-${i % 7}/sb-${i}`);

describe('ownerOf', () => {
  it('has no owner without peers, and the only peer owns everything', () => {
    expect(ownerOf('a/b', [])).toBeUndefined();
    expect(keys.every((k) => ownerOf(k, ['10.0.0.1:6443']) === '10.0.0.1:6443')).toBe(true);
  });

  it('does not depend on the order the peers are listed in', () => {
    const peers = ['10.0.0.1:6443', '10.0.0.2:6443', '10.0.0.3:6443'];
    const reversed = [...peers].reverse();
    for (const k of keys) expect(ownerOf(k, reversed)).toBe(ownerOf(k, peers));
  });

  it('spreads names over the peers', () => {
    const peers = ['10.0.0.1:6443', '10.0.0.2:6443', '10.0.0.3:6443'];
    const counts = new Map<string, number>();
    for (const k of keys) counts.set(ownerOf(k, peers) ?? '', (counts.get(ownerOf(k, peers) ?? '') ?? 0) + 1);
    expect([...counts.keys()].sort()).toEqual(peers);
    // 1,000 expected each; a skew past 20 % would mean a broken hash, not bad luck
    for (const n of counts.values()) expect(Math.abs(n - 1000)).toBeLessThan(200);
  });

  it('moves only the names of a peer that leaves, and only to the peers that stay', () => {
    const before = ['10.0.0.1:6443', '10.0.0.2:6443', '10.0.0.3:6443'];
    const after = ['10.0.0.1:6443', '10.0.0.3:6443'];
    let moved = 0;
    for (const k of keys) {
      const was = ownerOf(k, before);
      const now = ownerOf(k, after);
      if (was !== '10.0.0.2:6443') expect(now).toBe(was);
      else moved++;
    }
    expect(moved).toBeGreaterThan(0);
    expect(moved).toBeLessThan(keys.length / 2);
  });

  it('moves to a peer that joins only the names it now owns', () => {
    const before = ['10.0.0.1:6443', '10.0.0.2:6443'];
    const after = [...before, '10.0.0.9:6443'];
    for (const k of keys) {
      const now = ownerOf(k, after);
      if (now !== '10.0.0.9:6443') expect(now).toBe(ownerOf(k, before));
    }
  });
});
