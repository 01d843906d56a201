import { statusErrorOf } from '@sandbox-scale/scale-core';
import { FanOutGate } from './fan-out-gate';

/** A fan-out that runs until released. */
function held(): { done: Promise<void>; release: () => void } {
  let release = (): void => undefined;
  const done = new Promise<void>((r) => (release = r));
  return { done, release };
}

async function refusal(p: Promise<unknown>): Promise<{ code?: number; message?: string; retry?: number }> {
  try {
    await p;
    return {};
  } catch (err) {
    const s = statusErrorOf(err);
    return { code: s?.code, message: s?.message, retry: s?.details.retryAfterSeconds };
  }
}

describe('FanOutGate', () => {
  it('refuses a namespace past its cap with 429 naming it, while another namespace runs', async () => {
    const gate = new FanOutGate({ maxInFlight: 10, maxPerNamespace: 2 });
    const h = held();
    const a = [gate.run('a', () => h.done), gate.run('a', () => h.done)];
    expect(await refusal(gate.run('a', () => Promise.resolve()))).toEqual({
      code: 429,
      message: 'too many requests that ask every node in flight in namespace "a" (2); retry later',
      retry: 1,
    });
    expect(await gate.run('b', () => Promise.resolve('served'))).toBe('served');
    h.release();
    await Promise.all(a);
    // the slots come back once the fan-outs end, failed ones too
    await expect(gate.run('a', () => Promise.reject(new Error('node down')))).rejects.toThrow('node down');
    expect(gate.inFlight).toBe(0);
    expect(await gate.run('a', () => Promise.resolve(1))).toBe(1);
  });

  it('refuses everyone past the overall cap, before running anything', async () => {
    const gate = new FanOutGate({ maxInFlight: 3, maxPerNamespace: 2 });
    const h = held();
    const running = [gate.run('a', () => h.done), gate.run('b', () => h.done), gate.run('c', () => h.done)];
    let ran = false;
    expect(
      await refusal(
        gate.run('d', () => {
          ran = true;
          return Promise.resolve();
        }),
      ),
    ).toMatchObject({ code: 429, message: 'too many requests that ask every node in flight (3); retry later' });
    expect(ran).toBe(false);
    h.release();
    await Promise.all(running);
    expect(gate.inFlight).toBe(0);
  });

  it('keys namespaces by own properties only', async () => {
    const gate = new FanOutGate({ maxInFlight: 10, maxPerNamespace: 1 });
    expect(await gate.run('__proto__', () => Promise.resolve('ok'))).toBe('ok');
    expect(await gate.run('constructor', () => Promise.resolve('ok'))).toBe('ok');
    expect(gate.inFlight).toBe(0);
  });
});
