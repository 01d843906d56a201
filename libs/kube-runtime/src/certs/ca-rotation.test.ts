import { advance, phaseEndsAt, rotationStep, trustBundle, type CaState } from './ca-rotation';

const OLD = { cert: 'OLD-CERT\n', key: 'OLD-KEY' };
const NEW = { cert: 'NEW-CERT', key: 'NEW-KEY' };
const DAY = 86_400_000;
const base = { now: 100 * DAY, overlapMs: 60_000, renewBeforeMs: 365 * DAY, signingNotAfterMs: 1000 * DAY };

describe('CA rotation steps', () => {
  it('stays put until the CA is due or a new request comes, and acts on a request once', () => {
    const steady: CaState = { signing: OLD };
    expect(rotationStep(steady, base)).toEqual({ kind: 'steady' });
    expect(rotationStep(steady, { ...base, requested: '' })).toEqual({ kind: 'steady' });
    expect(rotationStep(steady, { ...base, requested: 'r1' })).toEqual({ kind: 'advance', to: 'trusting-new' });
    expect(rotationStep({ ...steady, handled: 'r1' }, { ...base, requested: 'r1' })).toEqual({ kind: 'steady' });
    expect(rotationStep(steady, { ...base, signingNotAfterMs: base.now + 364 * DAY })).toEqual({ kind: 'advance', to: 'trusting-new' });
    expect(rotationStep(steady, { ...base, renewBeforeMs: 0, signingNotAfterMs: base.now })).toEqual({ kind: 'steady' });
  });

  it('trusts both, then signs with the new while still trusting the old, then trusts the new alone, each after the overlap', () => {
    const s0: CaState = { signing: OLD };
    const s1 = advance(s0, 'trusting-new', base.now, NEW, 'r1');
    expect(s1).toEqual({ signing: OLD, next: NEW, phase: 'trusting-new', sinceMs: base.now, handled: 'r1' });
    expect(trustBundle(s1)).toBe('OLD-CERT\nNEW-CERT\n');
    expect(phaseEndsAt(s1, base.overlapMs)).toBe(base.now + base.overlapMs);
    expect(rotationStep(s1, { ...base, now: base.now + base.overlapMs - 1, requested: 'r2' })).toEqual({ kind: 'steady' });
    expect(rotationStep(s1, { ...base, now: base.now + base.overlapMs })).toEqual({ kind: 'advance', to: 'dropping-old' });

    const t2 = base.now + base.overlapMs;
    const s2 = advance(s1, 'dropping-old', t2);
    expect(s2).toEqual({ signing: NEW, previous: OLD.cert, phase: 'dropping-old', sinceMs: t2, handled: 'r1' });
    expect(trustBundle(s2)).toBe('NEW-CERT\nOLD-CERT\n');
    expect(rotationStep(s2, { ...base, now: t2 + base.overlapMs })).toEqual({ kind: 'advance', to: 'done' });

    const s3 = advance(s2, 'done', t2 + base.overlapMs);
    expect(s3).toEqual({ signing: NEW, handled: 'r1' });
    expect(trustBundle(s3)).toBe('NEW-CERT\n');
    expect(phaseEndsAt(s3, base.overlapMs)).toBeUndefined();
    expect(rotationStep(s3, { ...base, requested: 'r1' })).toEqual({ kind: 'steady' });
  });

  it('ends a rotation whose new CA went missing rather than signing with nothing', () => {
    const broken: CaState = { signing: OLD, phase: 'trusting-new', sinceMs: 0 };
    expect(advance(broken, 'dropping-old', base.now)).toEqual({ signing: OLD });
    expect(() => advance({ signing: OLD }, 'trusting-new', base.now)).toThrow(/needs the new CA/);
  });
});
