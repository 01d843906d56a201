import { INVENTORY_SEQ_ANNOTATION, type InventoryEntry, type NodeInventory } from '@sandbox-scale/scale-core';
import type { SandboxEvent } from '../resource/events';
import { Revisions } from '../storage/revisions';
import { SandboxCache } from '../storage/sandbox-cache';
import { WatchHub } from '../storage/watch-hub';
import { MAX_SEQ_AHEAD_MS, mergeNotice, seqAhead, seqOf, supersede } from './node-view';

const e = (name: string, id: string, phase = 'Running'): InventoryEntry => ({ name, id, phase });

const inv = (seq: number | undefined, entries: InventoryEntry[], extra: Partial<NodeInventory> = {}): NodeInventory => ({
  apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
  kind: 'NodeInventory',
  metadata: {
    name: 'n1',
    resourceVersion: '10',
    ...(seq === undefined ? {} : { annotations: { [INVENTORY_SEQ_ANNOTATION]: String(seq) } }),
  },
  node: 'n1',
  address: '10.0.0.1:7777',
  entries,
  ...extra,
});

const names = (v: NodeInventory | undefined): string[] => (v?.entries ?? []).map((x) => `${x.name}:${x.phase}`);

describe('mergeNotice', () => {
  const published = inv(100, [e('a/s1', 'sb_1'), e('a/s2', 'sb_2')]);

  it('applies a delta over a view at or after its base, keeping address and pools', () => {
    for (const viewSeq of [100, 120]) {
      const m = mergeNotice(inv(viewSeq, published.entries ?? []), {
        node: 'n1',
        seq: 150,
        base: 100,
        entries: [e('a/s1', 'sb_1', 'Paused'), e('a/s0', 'sb_0')],
        removed: ['sb_2'],
      });
      expect(m.kind).toBe('applied');
      if (m.kind !== 'applied') return;
      expect(names(m.view)).toEqual(['a/s0:Running', 'a/s1:Paused']);
      expect(seqOf(m.view)).toBe(150);
      expect(m.view.address).toBe('10.0.0.1:7777');
    }
  });

  it('is a conflict when the view predates the base, or carries no sequence', () => {
    expect(mergeNotice(published, { node: 'n1', seq: 300, base: 200, entries: [] })).toEqual({ kind: 'conflict', viewSeq: 100 });
    expect(mergeNotice(inv(undefined, []), { node: 'n1', seq: 300, base: 200, entries: [] }).kind).toBe('conflict');
  });

  it('never goes back in time: a notice no newer than the view is ignored', () => {
    expect(mergeNotice(published, { node: 'n1', seq: 100, entries: [] }).kind).toBe('ignored');
    expect(mergeNotice(published, { node: 'n1', seq: 90, base: 80, entries: [] }).kind).toBe('ignored');
  });

  it('replaces the set with a whole-set notice, and deleting the last entry leaves none', () => {
    const m = mergeNotice(published, { node: 'n1', seq: 101, entries: [e('b/x', 'sb_9')] });
    expect(m.kind === 'applied' && names(m.view)).toEqual(['b/x:Running']);
    const gone = mergeNotice(published, { node: 'n1', seq: 101, base: 100, entries: [], removed: ['sb_1', 'sb_2'] });
    expect(gone.kind === 'applied' && gone.view.entries).toBeUndefined();
  });

  it('ignores unknown and split nodes', () => {
    expect(mergeNotice(undefined, { node: 'n1', seq: 101, entries: [] }).kind).toBe('ignored');
    expect(mergeNotice(inv(100, [], { parts: 2 }), { node: 'n1', seq: 101, entries: [] }).kind).toBe('ignored');
  });
});

describe('a sequence ahead of the clock', () => {
  const now = 1_800_000_000_000;

  it("is not taken as a view's sequence, so the next notice replaces a view that carried one", () => {
    expect(seqAhead(Number.MAX_SAFE_INTEGER, now)).toBe(true);
    expect(seqAhead(now + MAX_SEQ_AHEAD_MS, now)).toBe(false);
    const frozen = inv(Number.MAX_SAFE_INTEGER, [e('a/s1', 'sb_1')]);
    expect(seqOf(frozen, now)).toBe(0);
    expect(seqOf(inv(now - 5, []), now)).toBe(now - 5);
    // without the bound every later notice would look older than the view and be ignored
    const m = mergeNotice(frozen, { node: 'n1', seq: Date.now(), entries: [e('a/s2', 'sb_2')] });
    expect(m.kind).toBe('applied');
    if (m.kind === 'applied') expect(names(m.view)).toEqual(['a/s2:Running']);
  });
});

describe('supersede', () => {
  const noticed = inv(200, [e('a/s1', 'sb_1', 'Paused')]);

  it('lets a publish at least as new as the notice replace it', () => {
    const next = inv(200, [e('a/s1', 'sb_1', 'Running')]);
    expect(supersede(next, noticed)).toBe(next);
  });

  it("keeps the notice's entries over an older publish, taking its pools", () => {
    const older = inv(150, [e('a/s1', 'sb_1', 'Running')], { pools: [{ template: 't', warm: 1, target: 2 }] });
    const kept = supersede(older, noticed);
    expect(names(kept)).toEqual(['a/s1:Paused']);
    expect(seqOf(kept)).toBe(200);
    expect(kept.pools).toEqual(older.pools);
  });

  it('lets a publish without a sequence (an older publisher) always replace the view', () => {
    const legacy = inv(undefined, []);
    expect(supersede(legacy, noticed)).toBe(legacy);
  });
});

describe('notices through the sandbox cache', () => {
  function setup() {
    const hub = new WatchHub(100);
    const cache = new SandboxCache({ graceMs: 50, hub, revisions: new Revisions() });
    cache.admit = supersede;
    const events: SandboxEvent[] = [];
    hub.subscribe((ev) => events.push(ev));
    cache.live = true;
    return { cache, events };
  }

  it('emits the watch events of a notice at once, and an older publish after it emits none', () => {
    const { cache, events } = setup();
    cache.upsertInventory(inv(100, [e('a/s1', 'sb_1'), e('a/s2', 'sb_2')]));
    events.length = 0;
    const m = mergeNotice(cache.inventory('n1'), {
      node: 'n1',
      seq: 200,
      base: 100,
      entries: [e('a/s1', 'sb_1', 'Paused')],
      removed: ['sb_2'],
    });
    if (m.kind !== 'applied') throw new Error(`not applied: ${m.kind}`);
    cache.upsertInventory(m.view);
    expect(events.map((ev) => `${ev.type} ${ev.object.metadata.name}`)).toEqual(['MODIFIED s1', 'DELETED s2']);
    expect(cache.get('a', 's1')?.entry.phase).toBe('Paused');
    // a publish built before the notice's read arrives late: nothing goes back
    events.length = 0;
    cache.upsertInventory({
      ...inv(150, [e('a/s1', 'sb_1'), e('a/s2', 'sb_2')]),
      metadata: { name: 'n1', resourceVersion: '11', annotations: { [INVENTORY_SEQ_ANNOTATION]: '150' } },
    });
    expect(events).toEqual([]);
    expect(cache.get('a', 's2')).toBeUndefined();
    // the next publish, as new as the notice, agrees with it: no event either
    cache.upsertInventory({
      ...inv(250, [e('a/s1', 'sb_1', 'Paused')]),
      metadata: { name: 'n1', resourceVersion: '12', annotations: { [INVENTORY_SEQ_ANNOTATION]: '250' } },
    });
    expect(events).toEqual([]);
    expect(cache.get('a', 's1')?.entry.phase).toBe('Paused');
  });
});
