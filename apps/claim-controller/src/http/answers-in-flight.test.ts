import { FakeClock, settle } from '@sandbox-scale/kube-runtime/testing';
import { AnswersInFlight, type EndTurn } from './answers-in-flight';

/** A turn asked for, and the function that ends it once granted. */
function ask(answers: AnswersInFlight, signal?: AbortSignal): { end?: EndTurn } {
  const t: { end?: EndTurn } = {};
  void answers.turn(signal).then((end) => (t.end = end));
  return t;
}

describe('AnswersInFlight', () => {
  it('lets deferred work run at once, however much of it, when no answer is being served', async () => {
    const clock = new FakeClock();
    const answers = new AnswersInFlight({ quietMs: 5, busySlots: 2, timers: clock });
    const jobs = Array.from({ length: 10 }, () => ask(answers));
    await settle();
    expect(jobs.every((j) => j.end !== undefined)).toBe(true);
    expect(answers.waiting).toBe(0);
  });

  it('runs only busySlots jobs at once while answers are in flight, each freed slot going to the longest waiting', async () => {
    const clock = new FakeClock();
    const answers = new AnswersInFlight({ quietMs: 5, busySlots: 2, timers: clock });
    answers.begin();
    const jobs = Array.from({ length: 4 }, () => ask(answers));
    await clock.advance(1_000);
    expect(jobs.map((j) => j.end !== undefined)).toEqual([true, true, false, false]);
    expect(answers.waiting).toBe(2);
    jobs[1]?.end?.();
    jobs[1]?.end?.(); // idempotent: frees one slot only
    await settle();
    expect(jobs.map((j) => j.end !== undefined)).toEqual([true, true, true, false]);
    expect(answers.waiting).toBe(1);
  });

  it('lets every waiting job go once the answers have been over for quietMs', async () => {
    const clock = new FakeClock();
    const answers = new AnswersInFlight({ quietMs: 5, busySlots: 1, timers: clock });
    const end1 = answers.begin();
    const end2 = answers.begin();
    const jobs = Array.from({ length: 5 }, () => ask(answers));
    await clock.advance(100);
    expect(jobs.filter((j) => j.end !== undefined)).toHaveLength(1);
    end1();
    end1(); // idempotent: the other answer still counts
    expect(answers.inFlight).toBe(1);
    await clock.advance(100);
    expect(answers.waiting).toBe(4);
    end2();
    await clock.advance(4);
    expect(answers.waiting).toBe(4);
    // another answer starts and ends in the quiet window: the window starts again from its end
    answers.begin()();
    await clock.advance(4);
    expect(answers.waiting).toBe(4);
    await clock.advance(1);
    expect(answers.waiting).toBe(0);
    expect(jobs.every((j) => j.end !== undefined)).toBe(true);
    expect(clock.timersPending).toBe(0);
  });

  it("ends a wait when the waiter's signal aborts, and forgets it", async () => {
    const clock = new FakeClock();
    const answers = new AnswersInFlight({ quietMs: 5, busySlots: 1, timers: clock });
    answers.begin();
    const first = ask(answers);
    const ac = new AbortController();
    const waiting = ask(answers, ac.signal);
    await settle();
    expect(first.end).toBeDefined();
    expect(answers.waiting).toBe(1);
    ac.abort();
    await settle();
    expect(waiting.end).toBeDefined();
    expect(answers.waiting).toBe(0);
    // an aborted turn holds no slot: the busy one is still the first job's alone
    const third = ask(answers);
    await settle();
    expect(third.end).toBeUndefined();
    first.end?.();
    await settle();
    expect(third.end).toBeDefined();
  });
});
