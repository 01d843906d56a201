import { Backoff, backoffDelay } from './backoff';

describe('backoff', () => {
  it('doubles from the initial delay and caps', () => {
    expect([0, 1, 2, 3, 4, 5, 6].map((n) => backoffDelay(n, 1000, 30_000))).toEqual([1000, 2000, 4000, 8000, 16000, 30000, 30000]);
  });
  it('survives absurd failure counts', () => {
    expect(backoffDelay(1e9, 5, 1_000_000)).toBe(1_000_000);
  });
  it('resets', () => {
    const b = new Backoff({ initialMs: 1000, maxMs: 30_000 });
    expect([b.next(), b.next(), b.next()]).toEqual([1000, 2000, 4000]);
    b.reset();
    expect(b.next()).toBe(1000);
  });
});
