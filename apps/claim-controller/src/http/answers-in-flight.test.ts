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
    const answers = new AnswersInFlight({ quietMs: 5, maxDeferMs: 0, busySlots: 2, timers: clock });
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
    const answers = new AnswersInFlight({ quietMs: 5, maxDeferMs: 0, busySlots: 1, timers: clock });
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
    const answers = new AnswersInFlight({ quietMs: 5, maxDeferMs: 0, busySlots: 1, timers: clock });
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

  it('holds jobs while answers keep coming until each has waited maxDeferMs, then runs them busySlots at a time, oldest first', async () => {
    const clock = new FakeClock();
    const answers = new AnswersInFlight({ quietMs: 5, maxDeferMs: 100, busySlots: 1, timers: clock });
    answers.begin(); // an answer stays in flight throughout
    const first = ask(answers);
    await clock.advance(50);
    const second = ask(answers);
    await clock.advance(49);
    expect([first.end, second.end]).toEqual([undefined, undefined]);
    await clock.advance(1);
    // the first has waited 100 ms: it takes the one slot; the second's wait is over at 150 ms
    expect(first.end).toBeDefined();
    expect(second.end).toBeUndefined();
    await clock.advance(60);
    // over, but the slot is held: it waits for the first to end, not for a timer
    expect(second.end).toBeUndefined();
    first.end?.();
    await settle();
    expect(second.end).toBeDefined();
    expect(answers.waiting).toBe(0);
    second.end?.();
    expect(clock.timersPending).toBe(0);
  });

  it('lets held jobs go as soon as the answers pause, before their wait is over', async () => {
    const clock = new FakeClock();
    const answers = new AnswersInFlight({ quietMs: 5, maxDeferMs: 2_000, busySlots: 1, timers: clock });
    const end = answers.begin();
    const jobs = Array.from({ length: 3 }, () => ask(answers));
    await clock.advance(10);
    expect(answers.waiting).toBe(3);
    end();
    await clock.advance(4);
    expect(answers.waiting).toBe(3);
    await clock.advance(1);
    expect(jobs.every((j) => j.end !== undefined)).toBe(true);
    expect(clock.timersPending).toBe(0);
  });
});
