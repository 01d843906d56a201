import { FakeClock, settle } from '@sandbox-scale/kube-runtime/testing';
import { AnswersInFlight } from './answers-in-flight';

function tracked(p: Promise<void>): { done: boolean } {
  const t = { done: false };
  void p.then(() => (t.done = true));
  return t;
}

describe('AnswersInFlight', () => {
  it('lets deferred work go at once when no answer is being served', async () => {
    const clock = new FakeClock();
    const answers = new AnswersInFlight({ quietMs: 5, maxWaitMs: 2_000, timers: clock });
    const w = tracked(answers.quiet());
    await settle();
    expect(w.done).toBe(true);
    expect(answers.waiting).toBe(0);
  });

  it('holds deferred work while answers are in flight, until they have been over for quietMs', async () => {
    const clock = new FakeClock();
    const answers = new AnswersInFlight({ quietMs: 5, maxWaitMs: 2_000, timers: clock });
    const end1 = answers.begin();
    const end2 = answers.begin();
    const w = tracked(answers.quiet());
    await clock.advance(100);
    expect(w.done).toBe(false);
    end1();
    end1(); // idempotent: the other answer still counts
    expect(answers.inFlight).toBe(1);
    await clock.advance(100);
    expect(w.done).toBe(false);
    end2();
    await clock.advance(4);
    expect(w.done).toBe(false);
    // another answer starts and ends in the quiet window: the window starts again from its end
    answers.begin()();
    await clock.advance(4);
    expect(w.done).toBe(false);
    await clock.advance(1);
    expect(w.done).toBe(true);
    expect(answers.waiting).toBe(0);
    expect(clock.timersPending).toBe(0);
  });

  it('never holds work longer than maxWaitMs however busy the fast path stays', async () => {
    const clock = new FakeClock();
    const answers = new AnswersInFlight({ quietMs: 5, maxWaitMs: 2_000, timers: clock });
    answers.begin();
    const waits = [tracked(answers.quiet()), tracked(answers.quiet())];
    await clock.advance(1_999);
    expect(waits.map((w) => w.done)).toEqual([false, false]);
    await clock.advance(1);
    expect(waits.map((w) => w.done)).toEqual([true, true]);
    expect(answers.waiting).toBe(0);
  });

  it("ends a wait when the waiter's signal aborts, and forgets it", async () => {
    const clock = new FakeClock();
    const answers = new AnswersInFlight({ quietMs: 5, maxWaitMs: 2_000, timers: clock });
    answers.begin();
    const ac = new AbortController();
    const w = tracked(answers.quiet(ac.signal));
    await settle();
    expect(answers.waiting).toBe(1);
    ac.abort();
    await settle();
    expect(w.done).toBe(true);
    expect(answers.waiting).toBe(0);
    expect(clock.timersPending).toBe(0);
    // an already aborted signal does not wait at all
    const again = tracked(answers.quiet(ac.signal));
    await settle();
    expect(again.done).toBe(true);
  });
});
