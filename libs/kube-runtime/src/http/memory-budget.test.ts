import { statusErrorOf } from '@sandbox-scale/scale-core';
import { MemoryBudget } from './memory-budget';

const MiB = 1 << 20;

function refusal(f: () => void): { code: number; message: string; retryAfter: number | undefined } | undefined {
  try {
    f();
    return undefined;
  } catch (err) {
    const status = statusErrorOf(err);
    if (status === undefined) throw err;
    return { code: status.code, message: status.message, retryAfter: status.details.retryAfterSeconds };
  }
}

describe('MemoryBudget', () => {
  it('refuses a namespace past its share with 429 and Retry-After, while another namespace still takes bytes', () => {
    const budget = new MemoryBudget({ maxBytes: 10 * MiB, maxBytesPerNamespace: 6 * MiB });
    const a1 = budget.lease('team-a');
    const a2 = budget.lease('team-a');
    a1.take(4 * MiB);
    expect(refusal(() => a2.take(3 * MiB))).toEqual({
      code: 429,
      message: 'too many bytes held for replies in namespace "team-a" (6 MiB), please try again later',
      retryAfter: 1,
    });
    const b = budget.lease('team-b');
    b.take(5 * MiB);
    expect(budget.held).toBe(9 * MiB);
    // the server's own cap holds for everyone together
    expect(refusal(() => budget.lease('team-c').take(2 * MiB))?.message).toContain('by this server (10 MiB)');
  });

  it('gives back everything a lease held, once, and forgets namespaces that hold nothing', () => {
    const budget = new MemoryBudget({ maxBytes: 10 * MiB, maxBytesPerNamespace: 6 * MiB });
    const a = budget.lease('team-a');
    a.take(MiB);
    a.take(2 * MiB);
    expect(a.held).toBe(3 * MiB);
    const other = budget.lease('team-a');
    other.take(MiB);
    // what a request still holds once the rest is garbage; keeping more than is held takes nothing
    a.keep(2 * MiB);
    expect({ lease: a.held, budget: budget.held }).toEqual({ lease: 2 * MiB, budget: 3 * MiB });
    a.keep(5 * MiB);
    expect(a.held).toBe(2 * MiB);
    a.release();
    a.release();
    expect(budget.held).toBe(MiB);
    expect(budget.namespaces).toBe(1);
    other.release();
    expect({ held: budget.held, namespaces: budget.namespaces }).toEqual({ held: 0, namespaces: 0 });
    // a refused take holds nothing
    expect(refusal(() => budget.lease('team-a').take(7 * MiB))?.code).toBe(429);
    expect(budget.held).toBe(0);
  });
});
