import { getEventListeners } from 'node:events';
import { withDeadline } from './deadline';

describe('withDeadline', () => {
  it('leaves no listener on the parent once the call ends, however many calls it served', async () => {
    const parent = new AbortController();
    await Promise.all(Array.from({ length: 50 }, () => withDeadline(parent.signal, 10_000, async (s) => s.aborted)));
    await expect(withDeadline(parent.signal, 10_000, () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(getEventListeners(parent.signal, 'abort')).toHaveLength(0);
  });

  it("aborts with the parent's reason", async () => {
    const parent = new AbortController();
    const seen = withDeadline(
      parent.signal,
      10_000,
      (s) => new Promise<unknown>((resolve) => s.addEventListener('abort', () => resolve(s.reason), { once: true })),
    );
    parent.abort(new Error('stopping'));
    await expect(seen).resolves.toEqual(new Error('stopping'));
  });

  it('aborts with a TimeoutError after the deadline', async () => {
    const reason = await withDeadline(
      undefined,
      5,
      (s) => new Promise<unknown>((resolve) => s.addEventListener('abort', () => resolve(s.reason), { once: true })),
    );
    expect((reason as Error).name).toBe('TimeoutError');
  });

  it('starts aborted under an aborted parent', async () => {
    const parent = new AbortController();
    parent.abort(new Error('gone'));
    await expect(withDeadline(parent.signal, 10_000, async (s) => s.aborted)).resolves.toBe(true);
  });
});
