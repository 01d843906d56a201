import { DeadlineSignals, sliceOf } from './deadline-signals';

describe('DeadlineSignals', () => {
  let now = 0;
  const clock = (): number => now;

  beforeEach(() => {
    jest.useFakeTimers();
    now = 0;
  });
  afterEach(() => jest.useRealTimers());

  it('shares one deadline between calls started within a slice, and opens a new one after it', () => {
    const d = new DeadlineSignals({ now: clock });
    const a = d.deadline(10_000);
    now = sliceOf(10_000) - 1;
    expect(d.deadline(10_000)).toBe(a);
    now = sliceOf(10_000);
    const b = d.deadline(10_000);
    expect(b).not.toBe(a);
    // another bound is another deadline
    expect(d.deadline(500)).not.toBe(b);
  });

  it('aborts with a TimeoutError no sooner than the bound and at most one slice later', () => {
    const d = new DeadlineSignals({ now: clock });
    const s = d.deadline(10_000);
    jest.advanceTimersByTime(10_000 - 1);
    expect(s.aborted).toBe(false);
    jest.advanceTimersByTime(sliceOf(10_000) + 1);
    expect(s.aborted).toBe(true);
    expect(s.reason).toBeInstanceOf(DOMException);
    expect((s.reason as DOMException).name).toBe('TimeoutError');
    expect((s.reason as DOMException).message).toContain('10000 ms');
  });

  it('never hands out a deadline that already fired', () => {
    const d = new DeadlineSignals({ now: clock });
    const s = d.deadline(100);
    // the clock the slots are opened by stands still while the timer fires
    jest.advanceTimersByTime(100 + sliceOf(100));
    expect(s.aborted).toBe(true);
    const next = d.deadline(100);
    expect(next).not.toBe(s);
    expect(next.aborted).toBe(false);
  });

  it('sizes slices at 1/50 of the bound, within 1 ms and 1 s', () => {
    expect(sliceOf(10_000)).toBe(200);
    expect(sliceOf(120_000)).toBe(1000);
    expect(sliceOf(10)).toBe(1);
  });
});
