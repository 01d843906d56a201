import { statusForError } from '@sandbox-scale/scale-core';
import { FastPathCap } from './fast-path-cap';

describe('FastPathCap', () => {
  const recorded = new Map<string, string[]>([['team-a', ['a1']]]);
  let now = 0;
  const cap = (max: number) =>
    new FastPathCap({ maxPerNamespace: max, recorded: (ns) => recorded.get(ns) ?? [], holdMs: 1000, now: () => now });

  it('counts recorded claims and deliveries on their way, per namespace, and names the cap in a 429', () => {
    const c = cap(2);
    c.admit({ namespace: 'team-a', name: 'a2' });
    let refused: unknown;
    try {
      c.admit({ namespace: 'team-a', name: 'a3' });
    } catch (err) {
      refused = err;
    }
    const status = statusForError(refused);
    expect(status).toMatchObject({ code: 429, reason: 'TooManyRequests' });
    expect(status.message).toContain('the cap is 2');
    // another namespace has its own count
    expect(() => c.admit({ namespace: 'team-b', name: 'b1' })).not.toThrow();
    c.release({ namespace: 'team-a', name: 'a2' });
    expect(() => c.admit({ namespace: 'team-a', name: 'a3' })).not.toThrow();
  });

  it('does not count a recorded delivery twice, and forgets one whose record never showed', () => {
    const c = cap(2);
    c.admit({ namespace: 'team-a', name: 'a1' });
    expect(() => c.admit({ namespace: 'team-a', name: 'a2' })).not.toThrow();
    expect(() => c.admit({ namespace: 'team-a', name: 'a3' })).toThrow();
    now += 1001;
    expect(() => c.admit({ namespace: 'team-a', name: 'a3' })).not.toThrow();
  });

  it('0 means no cap', () => {
    const c = cap(0);
    for (let i = 0; i < 10; i++) c.admit({ namespace: 'team-a', name: `x${i}` });
  });
});
