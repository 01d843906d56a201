import { statusForError } from '@sandbox-scale/scale-core';
import { InflightLimits } from './inflight-limits';

describe('InflightLimits', () => {
  it('refuses watches past the per-user and overall caps with 429, and frees slots on release', () => {
    const limits = new InflightLimits({
      maxWatches: 3,
      maxWatchesPerUser: 2,
      maxWatchesPerNamespace: 10,
      maxRequestsPerUser: 1,
      maxStreams: 10,
      maxStreamsPerNamespace: 10,
    });
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
    const limits = new InflightLimits({
      maxWatches: 10,
      maxWatchesPerUser: 10,
      maxWatchesPerNamespace: 10,
      maxRequestsPerUser: 1,
      maxStreams: 10,
      maxStreamsPerNamespace: 10,
    });
    const release = limits.acquire('alice', false);
    expect(() => limits.acquire('alice', false)).toThrow(/concurrent requests of user "alice"/);
    expect(() => limits.acquire('alice', true)).not.toThrow();
    expect(() => limits.acquire('bob', false)).not.toThrow();
    release();
    expect(limits.identities).toBe(2);
    expect(() => limits.acquire('alice', false)).not.toThrow();
  });

  it('caps the watches of one namespace over all its identities, while another namespace and cluster-wide watches are served', () => {
    const limits = new InflightLimits({
      maxStreams: 10,
      maxStreamsPerNamespace: 10,
      maxWatches: 100,
      maxWatchesPerUser: 10,
      maxWatchesPerNamespace: 3,
      maxRequestsPerUser: 10,
    });
    // three ServiceAccounts of team-a, one watch each: the namespace is full
    const held = ['sa-1', 'sa-2', 'sa-3'].map((sa) => limits.acquire(`system:serviceaccount:team-a:${sa}`, true, 'team-a'));
    let refused: unknown;
    try {
      limits.acquire('system:serviceaccount:team-a:sa-4', true, 'team-a');
    } catch (err) {
      refused = err;
    }
    const status = statusForError(refused);
    expect(status).toMatchObject({ code: 429, reason: 'TooManyRequests', details: { retryAfterSeconds: 1 } });
    expect(status.message).toContain('watches in namespace "team-a"');
    // another tenant is still served, and so is a watch across all namespaces
    expect(() => limits.acquire('system:serviceaccount:team-b:sa-1', true, 'team-b')).not.toThrow();
    expect(() => limits.acquire('system:serviceaccount:team-a:sa-4', true)).not.toThrow();
    // a request that is not a watch takes no namespace slot
    expect(() => limits.acquire('system:serviceaccount:team-a:sa-4', false, 'team-a')).not.toThrow();
    held[0]?.();
    held[0]?.();
    expect(() => limits.acquire('system:serviceaccount:team-a:sa-4', true, 'team-a')).not.toThrow();
    expect(() => limits.acquire('system:serviceaccount:team-a:sa-5', true, 'team-a')).toThrow(/namespace "team-a"/);
    expect(limits.namespaces).toBe(2);
  });

  it('shares streams per namespace across its users, and overall', () => {
    const limits = new InflightLimits({
      maxWatches: 10,
      maxWatchesPerUser: 10,
      maxWatchesPerNamespace: 10,
      maxRequestsPerUser: 2,
      maxStreams: 5,
      maxStreamsPerNamespace: 3,
    });
    // three streams of team-a (its ServiceAccounts together) fill its share
    const held = [1, 2, 3].map(() => limits.acquireStream('team-a'));
    expect(statusForError(catchOf(() => limits.acquireStream('team-a')))).toMatchObject({
      code: 429,
      message: 'too many streams (exec, files, port-forwards) in namespace "team-a", please try again later',
      details: { retryAfterSeconds: 1 },
    });
    // team-b still streams, until the overall cap
    const b = [limits.acquireStream('team-b'), limits.acquireStream('team-b')];
    expect(statusForError(catchOf(() => limits.acquireStream('team-c'))).message).toContain(
      'too many streams (exec, files, port-forwards),',
    );
    expect({ streams: limits.streams, namespaces: limits.namespaces }).toEqual({ streams: 5, namespaces: 2 });
    held[0]?.();
    held[0]?.();
    expect(limits.streams).toBe(4);
    expect(() => limits.acquireStream('team-c')).not.toThrow();
    for (const release of [...held, ...b]) release();
    expect(limits.streams).toBe(1);
  });
});

function catchOf(f: () => unknown): unknown {
  try {
    f();
  } catch (err) {
    return err;
  }
  throw new Error('expected a refusal');
}
