import { advanceKeyring, keyRotationStep, keyringStepAt, keyringText, keysOfText, type KeyringState } from './key-rotation';

const MIN = 60_000;
const base = { now: 1_000 * MIN, overlapMs: 1 * MIN, graceMs: 30 * MIN };

describe('claim-reference key rotation steps', () => {
  it('stays put until a new request comes, and acts on each request once', () => {
    const steady: KeyringState = { keys: ['OLD'] };
    expect(keyRotationStep(steady, base)).toEqual({ kind: 'steady' });
    expect(keyRotationStep(steady, { ...base, requested: '' })).toEqual({ kind: 'steady' });
    expect(keyRotationStep(steady, { ...base, requested: 'r1' })).toEqual({ kind: 'advance', to: 'adding' });
    expect(keyRotationStep({ ...steady, handled: 'r1' }, { ...base, requested: 'r1' })).toEqual({ kind: 'steady' });
    expect(keyringStepAt(steady, base)).toBeUndefined();
  });

  it('adds the new key to verify, then signs with it while the old verifies for the grace, then drops the old', () => {
    const s1 = advanceKeyring({ keys: ['OLD'] }, 'adding', base.now, 'NEW', 'r1');
    expect(s1).toEqual({ keys: ['OLD', 'NEW'], phase: 'adding', sinceMs: base.now, handled: 'r1' });
    expect(keyringText(s1)).toBe('OLD\nNEW\n');
    expect(keyRotationStep(s1, { ...base, now: base.now + MIN - 1 })).toEqual({ kind: 'steady' });
    expect(keyRotationStep(s1, { ...base, now: base.now + MIN })).toEqual({ kind: 'advance', to: 'signing' });
    expect(keyringStepAt(s1, base)).toBe(base.now + MIN);

    const t2 = base.now + MIN;
    const s2 = advanceKeyring(s1, 'signing', t2);
    expect(s2).toEqual({ keys: ['NEW', 'OLD'], phase: 'signing', sinceMs: t2, handled: 'r1' });
    // the grace, not the overlap, holds the old key
    expect(keyRotationStep(s2, { ...base, now: t2 + MIN })).toEqual({ kind: 'steady' });
    expect(keyRotationStep(s2, { ...base, now: t2 + 30 * MIN })).toEqual({ kind: 'advance', to: 'done' });
    expect(keyringStepAt(s2, base)).toBe(t2 + 30 * MIN);

    const s3 = advanceKeyring(s2, 'done', t2 + 30 * MIN);
    expect(s3).toEqual({ keys: ['NEW'], handled: 'r1' });
    expect(keyRotationStep(s3, { ...base, requested: 'r1' })).toEqual({ kind: 'steady' });
  });

  it('a grace shorter than the overlap is held for the overlap', () => {
    const s2: KeyringState = { keys: ['NEW', 'OLD'], phase: 'signing', sinceMs: base.now };
    expect(keyRotationStep(s2, { ...base, graceMs: 0, now: base.now + MIN - 1 })).toEqual({ kind: 'steady' });
    expect(keyRotationStep(s2, { ...base, graceMs: 0, now: base.now + MIN })).toEqual({ kind: 'advance', to: 'done' });
  });

  it('a rotation asked for while one is under way adds one more key behind the one signing', () => {
    const s = advanceKeyring({ keys: ['B', 'A'] }, 'adding', base.now, 'C', 'r2');
    expect(advanceKeyring(s, 'signing', base.now + MIN).keys).toEqual(['C', 'B', 'A']);
  });

  it('reads the Secret text line by line, signing key first', () => {
    expect(keysOfText(' A \n\nB\n')).toEqual(['A', 'B']);
    expect(keysOfText('')).toEqual([]);
  });
});
