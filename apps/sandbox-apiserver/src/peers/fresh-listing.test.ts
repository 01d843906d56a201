import { FreshListing } from './fresh-listing';

describe('FreshListing', () => {
  it('serves a burst with at most two listings, none begun before its caller asked', async () => {
    const releases: (() => void)[] = [];
    let value = 0;
    const listing = new FreshListing<number>(
      () =>
        new Promise<number>((resolve) => {
          const v = ++value;
          releases.push(() => resolve(v));
        }),
    );
    const first = listing.fresh();
    // asked while the first runs: the next listing, shared
    const burst = Array.from({ length: 50 }, () => listing.fresh());
    expect(listing.started).toBe(1);
    releases.shift()?.();
    expect(await first).toBe(1);
    await new Promise((r) => setImmediate(r));
    expect(listing.started).toBe(2);
    releases.shift()?.();
    expect(new Set(await Promise.all(burst))).toEqual(new Set([2]));
    // nothing running: a new call starts its own
    const later = listing.fresh();
    expect(listing.started).toBe(3);
    releases.shift()?.();
    expect(await later).toBe(3);
  });

  it('starts the next listing after a failed one, and the failure reaches only its own callers', async () => {
    let n = 0;
    const listing = new FreshListing<number>(() => (++n === 1 ? Promise.reject(new Error('node down')) : Promise.resolve(n)));
    const failed = listing.fresh();
    const next = listing.fresh();
    await expect(failed).rejects.toThrow('node down');
    expect(await next).toBe(2);
  });
});
