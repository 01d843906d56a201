import { InvalidRateError, TokenBucket } from './token-bucket';

describe('TokenBucket', () => {
  it('lets a burst through, then one token per 1/rate seconds', () => {
    let t = 0;
    const b = new TokenBucket({ ratePerSecond: 10, burst: 3, now: () => t });
    expect([b.take(), b.take(), b.take()]).toEqual([0, 0, 0]);
    expect(b.take()).toBe(100);
    t = 50;
    expect(b.take()).toBe(50);
    t = 100;
    expect(b.take()).toBe(0);
    expect(b.take()).toBe(100);
  });

  it('never holds more than its burst after a long idle time', () => {
    let t = 0;
    const b = new TokenBucket({ ratePerSecond: 100, burst: 2, now: () => t });
    t = 60_000;
    expect([b.take(), b.take()]).toEqual([0, 0]);
    expect(b.take()).toBeGreaterThan(0);
  });

  it('bounds the rate over a long run to ratePerSecond', () => {
    let t = 0;
    const b = new TokenBucket({ ratePerSecond: 50, burst: 1, now: () => t });
    let granted = 0;
    for (; t < 10_000; t += 1) if (b.take() === 0) granted++;
    expect(granted).toBeGreaterThanOrEqual(499);
    expect(granted).toBeLessThanOrEqual(501);
  });

  it('takes at the time a caller gives, and says when it is whole again so a keyed owner can forget it', () => {
    const b = new TokenBucket({ ratePerSecond: 1 / 300, burst: 2, now: () => 0 });
    expect([b.take(0), b.take(0)]).toEqual([0, 0]);
    expect(b.take(1_000)).toBe(299_000);
    expect(b.isFull(300_000)).toBe(false);
    expect(b.isFull(600_000)).toBe(true);
    // a reading older than the last one spends nothing it does not have
    expect(b.take(0)).toBe(0);
    expect(b.isFull(600_000)).toBe(false);
  });

  it('refuses a rate it cannot honour', () => {
    expect(() => new TokenBucket({ ratePerSecond: 0 })).toThrow(InvalidRateError);
    expect(() => new TokenBucket({ ratePerSecond: 5, burst: 0 })).toThrow(InvalidRateError);
  });
});
