import fc from 'fast-check';
import { seededRng } from '../node-choice/random';
import { backoffDelayMs, InvalidBackoffOptionsError, retry, sleep, type Sleep } from './retry';

describe('backoffDelayMs', () => {
  it('doubles from baseMs and stops at maxMs', () => {
    const o = { baseMs: 100, maxMs: 1000 };
    expect([0, 1, 2, 3, 4, 5, 60, 5000].map((a) => backoffDelayMs(a, o))).toEqual([100, 200, 400, 800, 1000, 1000, 1000, 1000]);
  });

  it('takes jitter off the delay, never adding to it', () => {
    expect(backoffDelayMs(2, { baseMs: 100, maxMs: 1000, jitter: 0.5, rng: () => 0 })).toBe(400);
    expect(backoffDelayMs(2, { baseMs: 100, maxMs: 1000, jitter: 0.5, rng: () => 0.5 })).toBe(300);
    expect(backoffDelayMs(2, { baseMs: 100, maxMs: 1000, jitter: 1, rng: () => 0.999 })).toBeCloseTo(0.4);
  });

  it('stays within [d·(1−jitter), d] for any attempt and draw (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 100 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 0.9999, noNaN: true }),
        (attempt, jitter, r) => {
          const d = Math.min(30_000, 10 * 2 ** attempt);
          const got = backoffDelayMs(attempt, { baseMs: 10, maxMs: 30_000, jitter, rng: () => r });
          expect(got).toBeLessThanOrEqual(d);
          expect(got).toBeGreaterThanOrEqual(d * (1 - jitter) - 1e-9);
        },
      ),
    );
  });

  it('rejects nonsense options', () => {
    expect(() => backoffDelayMs(0, { baseMs: 10, maxMs: 5 })).toThrow(InvalidBackoffOptionsError);
    expect(() => backoffDelayMs(0, { baseMs: 10, maxMs: 50, jitter: 2 })).toThrow(InvalidBackoffOptionsError);
  });
});

describe('retry', () => {
  const recordingSleep = (): { sleep: Sleep; delays: number[] } => {
    const delays: number[] = [];
    return { delays, sleep: async (ms) => void delays.push(ms) };
  };

  it('returns the first success and sleeps the backoff between failures', async () => {
    const s = recordingSleep();
    let calls = 0;
    const result = await retry(
      async (attempt) => {
        calls++;
        if (attempt < 3) throw new Error(`fail ${attempt}`);
        return 'ok';
      },
      { attempts: 5, baseMs: 10, maxMs: 25, sleep: s.sleep },
    );
    expect(result).toBe('ok');
    expect(calls).toBe(4);
    expect(s.delays).toEqual([10, 20, 25]);
  });

  it('throws the last error unchanged when attempts run out', async () => {
    const s = recordingSleep();
    const last = new Error('third');
    let n = 0;
    await expect(
      retry(
        async () => {
          n++;
          throw n === 3 ? last : new Error('earlier');
        },
        { attempts: 3, baseMs: 1, maxMs: 1, sleep: s.sleep },
      ),
    ).rejects.toBe(last);
    expect(s.delays).toHaveLength(2);
  });

  it('stops at once on an error shouldRetry refuses', async () => {
    const s = recordingSleep();
    const fatal = new Error('fatal');
    let calls = 0;
    await expect(
      retry(
        async () => {
          calls++;
          throw fatal;
        },
        { attempts: 10, baseMs: 1, maxMs: 1, sleep: s.sleep, shouldRetry: (e) => e !== fatal },
      ),
    ).rejects.toBe(fatal);
    expect(calls).toBe(1);
    expect(s.delays).toEqual([]);
  });

  it('reports each retry with its delay', async () => {
    const seen: [string, number, number][] = [];
    await retry(
      async (a) => {
        if (a === 0) throw new Error('once');
        return a;
      },
      { attempts: 2, baseMs: 7, maxMs: 7, sleep: async () => undefined, onRetry: (e, a, d) => seen.push([(e as Error).message, a, d]) },
    );
    expect(seen).toEqual([['once', 0, 7]]);
  });

  it('uses the injected rng for jitter, so runs are reproducible', async () => {
    const run = async (): Promise<number[]> => {
      const s = recordingSleep();
      await retry(async (a) => (a < 3 ? Promise.reject(new Error('x')) : a), {
        attempts: 4,
        baseMs: 100,
        maxMs: 1000,
        jitter: 0.5,
        rng: seededRng(9),
        sleep: s.sleep,
      });
      return s.delays;
    };
    expect(await run()).toEqual(await run());
  });

  it('rejects with the abort reason while waiting, and does not call fn again', async () => {
    const ac = new AbortController();
    const reason = new Error('shutting down');
    let calls = 0;
    const p = retry(
      async () => {
        calls++;
        throw new Error('busy');
      },
      // aborted once the backoff wait has begun
      { attempts: 100, baseMs: 60_000, maxMs: 60_000, signal: ac.signal, onRetry: () => queueMicrotask(() => ac.abort(reason)) },
    );
    await expect(p).rejects.toBe(reason);
    expect(calls).toBe(1);
  });

  it('does not start when the signal is already aborted', async () => {
    const ac = new AbortController();
    ac.abort(new Error('gone'));
    const fn = jest.fn(async () => 1);
    await expect(retry(fn, { attempts: 3, baseMs: 1, maxMs: 1, signal: ac.signal })).rejects.toThrow('gone');
    expect(fn).not.toHaveBeenCalled();
  });

  it('rejects attempts below one', async () => {
    await expect(retry(async () => 1, { attempts: 0, baseMs: 1, maxMs: 1 })).rejects.toThrow(InvalidBackoffOptionsError);
  });
});

describe('sleep', () => {
  it('rejects on abort', async () => {
    const ac = new AbortController();
    const p = sleep(60_000, ac.signal);
    ac.abort(new Error('stop'));
    await expect(p).rejects.toThrow('stop');
  });

  it('resolves early on abort when asked to, and at once when already aborted', async () => {
    const ac = new AbortController();
    const p = sleep(60_000, ac.signal, { onAbort: 'resolve' });
    ac.abort(new Error('stop'));
    await expect(p).resolves.toBeUndefined();
    await expect(sleep(60_000, ac.signal, { onAbort: 'resolve' })).resolves.toBeUndefined();
    await expect(sleep(60_000, ac.signal)).rejects.toThrow('stop');
  });

  it('waits its delay on the timers it is given, and clears its timer on abort', async () => {
    const pending = new Map<number, () => void>();
    const delays: number[] = [];
    let seq = 0;
    const timers = {
      setTimeout: (fn: () => void, ms: number): unknown => (delays.push(ms), pending.set(++seq, fn), seq),
      clearTimeout: (h: unknown): void => void pending.delete(h as number),
    };
    let done = false;
    const p = sleep(1_000, undefined, { timers }).then(() => (done = true));
    expect(pending.size).toBe(1);
    expect(delays).toEqual([1_000]);
    await Promise.resolve();
    expect(done).toBe(false);
    pending.get(1)?.();
    await p;
    expect(done).toBe(true);
    const ac = new AbortController();
    const q = sleep(1_000, ac.signal, { timers, onAbort: 'resolve' });
    ac.abort();
    await q;
    expect(pending.has(2)).toBe(false);
  });
});
