import { ClaimNames } from './claim-names';

describe('ClaimNames', () => {
  const t = { namespace: 'ns', name: 'a' };

  it('reserves a free name once, until released', () => {
    const names = new ClaimNames({ cached: () => false, holdMs: 1000 });
    expect(names.take(t)).toBe(true);
    expect(names.take(t)).toBe(false);
    names.release(t);
    expect(names.take(t)).toBe(true);
  });

  it('refuses a name the cache holds', () => {
    const names = new ClaimNames({ cached: (x) => x.name === 'a', holdMs: 1000 });
    expect(names.take(t)).toBe(false);
    expect(names.take({ namespace: 'ns', name: 'b' })).toBe(true);
    expect(names.size).toBe(1);
  });

  it('lets a reservation go after the hold, so memory stays bounded', () => {
    let now = 0;
    const names = new ClaimNames({ cached: () => false, holdMs: 1000, now: () => now });
    expect(names.take(t)).toBe(true);
    expect(names.take({ namespace: 'ns', name: 'b' })).toBe(true);
    now = 1500;
    expect(names.take({ namespace: 'ns', name: 'c' })).toBe(true);
    expect(names.size).toBe(1);
    expect(names.take(t)).toBe(true);
  });
});
