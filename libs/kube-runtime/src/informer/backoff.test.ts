import { Backoff } from './backoff';

describe('backoff', () => {
  it('doubles from the base delay, caps, and resets', () => {
    const b = new Backoff({ baseMs: 1000, maxMs: 30_000 });
    expect(Array.from({ length: 7 }, () => b.next())).toEqual([1000, 2000, 4000, 8000, 16000, 30000, 30000]);
    expect(b.attempts).toBe(7);
    b.reset();
    expect(b.next()).toBe(1000);
  });
});
