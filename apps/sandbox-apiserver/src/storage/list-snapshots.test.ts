import { ListSnapshots } from './list-snapshots';
import type { RowsSnapshot } from './sorted-rows';

describe('ListSnapshots', () => {
  it('shares one snapshot while the rows are unchanged and keeps older ones for their tokens', () => {
    let rows: RowsSnapshot = { keys: [], rows: [] };
    const snaps = new ListSnapshots(() => rows);
    const a = snaps.current();
    expect(snaps.current()).toBe(a);
    rows = { keys: ['x'], rows: [] };
    const b = snaps.current();
    expect(b.id).not.toBe(a.id);
    expect(snaps.get(snaps.epoch, a.id)).toBe(a);
    expect(snaps.get(snaps.epoch + 1, a.id)).toBeUndefined();
  });

  it('drops the least recently used beyond max and any idle past idleMs', () => {
    let now = 0;
    let n = 0;
    const snaps = new ListSnapshots(() => ({ keys: [String(n++)], rows: [] }), { max: 2, idleMs: 1000, now: () => now });
    const a = snaps.current();
    const b = snaps.current();
    expect(snaps.get(snaps.epoch, a.id)).toBe(a); // a is now the most recently used
    const c = snaps.current();
    expect(snaps.get(snaps.epoch, b.id)).toBeUndefined();
    expect(snaps.get(snaps.epoch, a.id)).toBe(a);
    now = 1500;
    expect(snaps.get(snaps.epoch, c.id)).toBeUndefined();
    expect(snaps.size).toBeLessThanOrEqual(2);
  });
});
