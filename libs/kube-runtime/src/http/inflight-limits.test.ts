import { statusForError } from '@sandbox-scale/scale-core';
import { InflightLimits } from './inflight-limits';

describe('InflightLimits', () => {
  it('refuses watches past the per-user and overall caps with 429, and frees slots on release', () => {
    const limits = new InflightLimits({ maxWatches: 3, maxWatchesPerUser: 2, maxRequestsPerUser: 1 });
    const a1 = limits.acquire('alice', true);
    limits.acquire('alice', true);
    let refused: unknown;
    try {
      limits.acquire('alice', true);
    } catch (err) {
      refused = err;
    }
    expect(statusForError(refused)).toMatchObject({ code: 429, reason: 'TooManyRequests', details: { retryAfterSeconds: 1 } });
    limits.acquire('bob', true);
    expect(() => limits.acquire('carol', true)).toThrow(/too many watches/);
    a1();
    a1(); // idempotent: a double release frees one slot only
    expect(limits.watches).toBe(2);
    expect(() => limits.acquire('carol', true)).not.toThrow();
    expect(() => limits.acquire('carol', true)).toThrow(/too many watches/);
  });

  it('counts other requests per user apart from watches and forgets users without slots', () => {
    const limits = new InflightLimits({ maxWatches: 10, maxWatchesPerUser: 10, maxRequestsPerUser: 1 });
    const release = limits.acquire('alice', false);
    expect(() => limits.acquire('alice', false)).toThrow(/concurrent requests of user "alice"/);
    expect(() => limits.acquire('alice', true)).not.toThrow();
    expect(() => limits.acquire('bob', false)).not.toThrow();
    release();
    expect(limits.identities).toBe(2);
    expect(() => limits.acquire('alice', false)).not.toThrow();
  });
});
