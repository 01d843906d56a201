import { FAILURES_BEFORE_BACKOFF, Pool, TRIM_AFTER_MS } from './pool';
import { KeyTable } from './wire-key';

const key = new KeyTable().intern('t', 'none', 'small');
const settings = (warm: number, warmMax: number) => ({ warm, warmMax, idleHibernateS: 0, archiveAfterS: 0, archiveDeleteAfterS: 0 });

describe('Pool target', () => {
  it('is the static floor without warm_max', () => {
    const p = new Pool(key, settings(4, 0));
    for (let t = 0; t < 10_000; t += 10) p.recordClaim(t);
    expect(p.target(10_000)).toBe(4);
  });

  it('follows demand between warm and warm_max, and decays when claims stop', () => {
    const p = new Pool(key, settings(2, 50));
    p.recordProvision(true, 1000, 0); // lead 1 s
    for (let t = 0; t <= 10_000; t += 100) p.recordClaim(t); // 10 claims/s
    expect(p.target(10_000)).toBe(20); // ceil(10/s × 1 s × 2)
    expect(p.target(10_000 + 600_000)).toBe(2);
    for (let t = 0; t <= 10_000; t += 10) p.recordClaim(20_000 + t); // 100 claims/s
    expect(p.target(30_000)).toBe(50);
  });

  it('backs off after consecutive failures, doubling, and resets on success', () => {
    const p = new Pool(key, settings(1, 0));
    for (let i = 0; i < FAILURES_BEFORE_BACKOFF - 1; i++) p.recordProvision(false, 0, 0);
    expect(p.backoffUntil).toBe(0);
    p.recordProvision(false, 0, 0);
    expect(p.backoffMs).toBe(250);
    p.recordProvision(false, 0, 0);
    expect(p.backoffMs).toBe(500);
    p.recordProvision(true, 30, 0);
    expect([p.failures, p.backoffMs, p.backoffUntil]).toEqual([0, 0, 0]);
    expect(TRIM_AFTER_MS).toBe(60_000);
  });
});
