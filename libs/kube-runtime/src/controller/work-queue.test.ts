import { WorkQueue } from './work-queue';
import { ItemBackoff } from './rate-limiter';
import { FakeClock, settle } from '../testing/fake-clock';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = (): void => undefined;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const flush = settle;

describe('WorkQueue', () => {
  it('deduplicates a key that is waiting', async () => {
    const q = new WorkQueue({ concurrency: 1 });
    const seen: string[] = [];
    q.add('a');
    q.add('a');
    q.add('b');
    q.add('a');
    expect(q.depth).toBe(2);
    q.start(async (k) => {
      seen.push(k);
    });
    await q.drain();
    expect(seen).toEqual(['a', 'b']);
  });

  it('never runs one key twice at once, and re-runs a key added while it ran', async () => {
    const q = new WorkQueue({ concurrency: 4 });
    const gate = deferred();
    let active = 0;
    let maxActive = 0;
    const runs: string[] = [];
    q.start(async (k) => {
      active++;
      maxActive = Math.max(maxActive, active);
      runs.push(k);
      if (runs.length === 1) await gate.promise;
      active--;
    });
    q.add('a');
    await flush();
    q.add('a');
    q.add('a');
    await flush();
    expect(runs).toEqual(['a']);
    gate.resolve();
    await flush();
    await q.drain();
    expect(runs).toEqual(['a', 'a']);
    expect(maxActive).toBe(1);
  });

  it('bounds concurrency across keys', async () => {
    const q = new WorkQueue({ concurrency: 2 });
    const gate = deferred();
    let active = 0;
    let maxActive = 0;
    q.start(async () => {
      active++;
      maxActive = Math.max(maxActive, active);
      await gate.promise;
      active--;
    });
    for (const k of ['a', 'b', 'c', 'd', 'e']) q.add(k);
    await flush();
    expect(active).toBe(2);
    gate.resolve();
    await q.drain();
    expect(maxActive).toBe(2);
  });

  it('addAfter fires at the due time and keeps the earliest of two delays', async () => {
    const clock = new FakeClock();
    const q = new WorkQueue({ concurrency: 1, timers: clock });
    const seen: string[] = [];
    q.start(async (k) => {
      seen.push(k);
    });
    q.addAfter('a', 1000);
    q.addAfter('a', 5000);
    q.addAfter('b', 3000);
    q.addAfter('b', 2000);
    await clock.advance(999);
    expect(seen).toEqual([]);
    await clock.advance(1);
    expect(seen).toEqual(['a']);
    await clock.advance(1000);
    expect(seen).toEqual(['a', 'b']);
    await clock.advance(10_000);
    expect(seen).toEqual(['a', 'b']);
  });

  it("cancelDelayed drops one key's delayed add and its timer, nothing else", async () => {
    const clock = new FakeClock();
    const q = new WorkQueue({ concurrency: 1, timers: clock });
    const seen: string[] = [];
    q.start(async (k) => {
      seen.push(k);
    });
    q.addAfter('gone', 1000);
    q.addAfter('kept', 1000);
    q.cancelDelayed('gone');
    q.cancelDelayed('never-added');
    await clock.advance(5000);
    expect(seen).toEqual(['kept']);
    // a later delayed add of the same key is held again
    q.addAfter('gone', 1000);
    await clock.advance(1000);
    expect(seen).toEqual(['kept', 'gone']);
  });

  it('drops waiting and delayed keys on shutdown but lets the running one finish', async () => {
    const clock = new FakeClock();
    const q = new WorkQueue({ concurrency: 1, timers: clock });
    const gate = deferred();
    const seen: string[] = [];
    q.start(async (k) => {
      seen.push(k);
      await gate.promise;
    });
    q.add('a');
    q.add('b');
    q.addAfter('c', 10);
    await flush();
    q.shutDown();
    q.add('d');
    await clock.advance(100);
    gate.resolve();
    await q.drain();
    expect(seen).toEqual(['a']);
    expect(q.depth).toBe(0);
  });

  it('reports depth', () => {
    const depths: number[] = [];
    const q = new WorkQueue({ concurrency: 1, onDepth: (d) => depths.push(d) });
    q.add('a');
    q.add('b');
    expect(depths).toEqual([1, 2]);
  });
});

describe('ItemBackoff', () => {
  it('doubles per failure of the same key from 5 ms, capped at 1000 s, and forgets', () => {
    const b = new ItemBackoff();
    const delays = Array.from({ length: 5 }, () => b.when('k'));
    expect(delays).toEqual([5, 10, 20, 40, 80]);
    expect(b.when('other')).toBe(5);
    for (let i = 0; i < 30; i++) b.when('k');
    expect(b.when('k')).toBe(1_000_000);
    expect(b.retries('k')).toBe(36);
    b.forget('k');
    expect(b.when('k')).toBe(5);
  });

  it('takes a custom base and cap', () => {
    const b = new ItemBackoff({ baseMs: 100, maxMs: 300 });
    expect([b.when('k'), b.when('k'), b.when('k')]).toEqual([100, 200, 300]);
  });
});
