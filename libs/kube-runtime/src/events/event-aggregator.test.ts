import { EventAggregator } from './event-aggregator';

describe('EventAggregator', () => {
  it('creates the first event and counts repeats of the same one', () => {
    const a = new EventAggregator();
    expect(a.observe('k', 'obj', 0).kind).toBe('create');
    const r = a.observe('k', 'obj', 10);
    expect(r.kind).toBe('repeat');
    if (r.kind === 'repeat') expect(r.entry.count).toBe(2);
    expect(a.observe('other', 'obj', 10).kind).toBe('create');
  });

  it('flushes repeats of a created event at most once per interval', () => {
    const a = new EventAggregator({ flushIntervalMs: 30_000 });
    const c = a.observe('k', 'obj', 0);
    if (c.kind !== 'create') throw new Error('expected create');
    c.entry.eventName = 'obj.1';
    a.markWritten(c.entry, 1, 0);
    for (let i = 1; i <= 100; i++) a.observe('k', 'obj', i * 100);
    expect(a.dueForFlush(29_999)).toHaveLength(0);
    const due = a.dueForFlush(30_000);
    expect(due.map((e) => e.count)).toEqual([101]);
    a.markWritten(c.entry, 101, 30_000);
    expect(a.dueForFlush(90_000)).toHaveLength(0);
    expect(a.dueForFlush(0, true)).toHaveLength(0);
  });

  it('starts a new event after the window of quiet', () => {
    const a = new EventAggregator({ windowMs: 1000 });
    a.observe('k', 'obj', 0);
    expect(a.observe('k', 'obj', 500).kind).toBe('repeat');
    const c = a.observe('k', 'obj', 500);
    if (c.kind === 'repeat') a.markWritten(c.entry, c.entry.count, 500);
    expect(a.observe('k', 'obj', 2000).kind).toBe('create');
  });

  it('drops new events of one object beyond the burst and refills slowly', () => {
    const a = new EventAggregator({ burst: 3, refillIntervalMs: 1000 });
    const kinds = Array.from({ length: 5 }, (_, i) => a.observe(`k${i}`, 'hot', 0).kind);
    expect(kinds).toEqual(['create', 'create', 'create', 'drop', 'drop']);
    expect(a.observe('cold', 'other-object', 0).kind).toBe('create');
    expect(a.observe('k9', 'hot', 999).kind).toBe('drop');
    expect(a.observe('k9', 'hot', 1000).kind).toBe('create');
    expect(a.observe('k10', 'hot', 1000).kind).toBe('drop');
  });
});

describe('EventAggregator with many series', () => {
  it('expires a quiet series exactly at its window even between sweeps, and sweeps the others', () => {
    const a = new EventAggregator({ windowMs: 5000 });
    for (let i = 0; i < 1000; i++) {
      const c = a.observe(`k${i}`, `obj${i}`, 0);
      if (c.kind === 'create') a.markWritten(c.entry, 1, 0);
    }
    expect(a.size).toBe(1000);
    // within the sweep interval of the last sweep at 5000: k0 is still judged on its own
    expect(a.observe('k0', 'obj0', 5000).kind).toBe('repeat');
    expect(a.observe('k1', 'obj1', 5001).kind).toBe('create');
    // the next sweep drops every quiet, written series
    a.observe('late', 'obj-late', 6001);
    expect(a.size).toBe(3);
  });
});

describe('EventAggregator bound', () => {
  it('holds at most maxSeries series, the oldest going first', () => {
    const a = new EventAggregator({ maxSeries: 100 });
    for (let i = 0; i < 10_000; i++) expect(a.observe(`k${i}`, `obj${i}`, 0).kind).toBe('create');
    expect(a.size).toBe(100);
    expect(a.observe('k9999', 'obj9999', 1).kind).toBe('repeat');
    expect(a.observe('k0', 'obj0', 1).kind).toBe('create');
  });
});
