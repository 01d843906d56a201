import { PeerSet } from '@sandbox-scale/kube-runtime';
import { renewalScope } from './renewal-scope';

const A = '10.0.0.1:6443';
const B = '10.0.0.2:6443';
const names = Array.from({ length: 200 }, (_, i) => `sb-${i}`);

/** Two replicas over the same peer list, on a clock the test moves. */
function pair(): { now: { t: number }; peersA: PeerSet; peersB: PeerSet } {
  const now = { t: 1_000_000 };
  const peersA = new PeerSet(A, () => now.t);
  const peersB = new PeerSet(B, () => now.t);
  for (const p of [peersA, peersB]) p.update([A, B]);
  return { now, peersA, peersB };
}

describe('renewalScope', () => {
  it('splits the sandboxes between two settled replicas: each renewed by exactly one, its routing owner', () => {
    const { peersA, peersB } = pair();
    const a = renewalScope({ peers: peersA, peered: true, peersKnown: () => true, settleMs: 60_000 });
    const b = renewalScope({ peers: peersB, peered: true, peersKnown: () => true, settleMs: 60_000 });
    const byA = names.filter((n) => a('ns', n));
    const byB = names.filter((n) => b('ns', n));
    console.log(JSON.stringify({ test: 'renewal-scope', sandboxes: names.length, renewed_by_a: byA.length, renewed_by_b: byB.length }));
    expect(byA.length + byB.length).toBe(names.length);
    expect(byA.filter((n) => byB.includes(n))).toEqual([]);
    // neither replica is left idle by the hashing
    expect(byA.length).toBeGreaterThan(50);
    expect(byB.length).toBeGreaterThan(50);
    for (const n of byA) expect(peersA.ownerOf('ns', n)).toBe(A);
  });

  it('renews everything while the owner is not certain: alone, peers unknown, or peers changed within the settle period', () => {
    const { now, peersA } = pair();
    let known = false;
    const scoped = renewalScope({ peers: peersA, peered: true, peersKnown: () => known, settleMs: 60_000 });
    expect(names.every((n) => scoped('ns', n))).toBe(true);
    known = true;
    expect(names.every((n) => scoped('ns', n))).toBe(false);
    peersA.update([A, B, '10.0.0.3:6443']);
    expect(names.every((n) => scoped('ns', n))).toBe(true);
    now.t += 60_000;
    const third = names.filter((n) => scoped('ns', n));
    expect(third.length).toBeLessThan(names.length);
    expect(third.length).toBeGreaterThan(0);
    const alone = renewalScope({ peers: peersA, peered: false, peersKnown: () => true, settleMs: 60_000 });
    expect(names.every((n) => alone('ns', n))).toBe(true);
    const noSelf = renewalScope({ peers: new PeerSet(''), peered: true, peersKnown: () => true, settleMs: 60_000 });
    expect(names.every((n) => noSelf('ns', n))).toBe(true);
  });
});
