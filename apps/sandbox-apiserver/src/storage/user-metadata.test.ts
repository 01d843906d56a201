import { eventually } from '@sandbox-scale/e2e';
import { synthesizeSandbox, type NodeInventory } from '@sandbox-scale/scale-core';
import type { SandboxEvent } from '../resource/events';
import { WatchHub } from './watch-hub';
import { Revisions } from './revisions';
import { SandboxCache } from './sandbox-cache';
import { decorate, type MetadataEntry } from './user-metadata';

const inventory = (entries: NodeInventory['entries']): NodeInventory => ({
  apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
  kind: 'NodeInventory',
  metadata: { name: 'node-a', resourceVersion: '10', creationTimestamp: '2026-11-30T11:00:00Z' },
  node: 'node-a',
  ...(entries ? { entries } : {}),
});

function setup(overlayTtlMs = 60_000) {
  const hub = new WatchHub(100);
  const cache = new SandboxCache({ graceMs: 50, hub, revisions: new Revisions(), overlayTtlMs });
  const entries = new Map<string, MetadataEntry>();
  cache.decorate = (obj) => decorate(obj, entries.get(`${obj.metadata.namespace}/${obj.metadata.name}`));
  const events: SandboxEvent[] = [];
  hub.subscribe((e) => events.push(e));
  return { cache, entries, events };
}

describe('SandboxCache with user metadata', () => {
  it('serves a touched sandbox under a new revision with its labels, as MODIFIED', () => {
    const { cache, entries, events } = setup();
    cache.upsertInventory(inventory([{ name: 'ns/s1', id: 'sb_1', phase: 'Running' }]));
    cache.live = true;
    const before = cache.objectOf(cache.get('ns', 's1')!);
    entries.set('ns/s1', { uid: before.metadata.uid, labels: { team: 'x' }, annotations: { note: 'n' } });
    cache.touch('ns', 's1');
    const after = cache.objectOf(cache.get('ns', 's1')!);
    expect(after.metadata.labels).toMatchObject({ team: 'x', 'sandbox.cocoonstack.io/node': 'node-a' });
    expect(after.metadata.annotations).toMatchObject({ note: 'n' });
    expect(Number(after.metadata.resourceVersion)).toBeGreaterThan(Number(before.metadata.resourceVersion));
    expect(events.map((e) => `${e.type} ${e.object.metadata.labels['team'] ?? '-'}`)).toEqual(['MODIFIED x']);
    // the node's next publish of the same entry keeps the touched row, and a release removes it
    cache.upsertInventory({ ...inventory([]), metadata: { ...inventory([]).metadata, resourceVersion: '11' } });
    expect(cache.get('ns', 's1')).toBeUndefined();
    expect(events.map((e) => e.type)).toEqual(['MODIFIED', 'DELETED']);
  });

  it('still expires a created overlay that was touched', async () => {
    const { cache, entries } = setup(50);
    cache.upsertInventory(inventory([]));
    cache.live = true;
    const entry = { name: 'ns/made', id: 'sb_9', phase: 'Running' };
    const obj = synthesizeSandbox('node-a', entry, { resourceVersion: '0' });
    cache.addCreated('node-a', entry, obj);
    entries.set('ns/made', { uid: obj.metadata.uid, labels: { origin: 'create' }, annotations: {} });
    cache.touch('ns', 'made');
    expect(cache.objectOf(cache.get('ns', 'made')!).metadata.labels['origin']).toBe('create');
    await eventually(() => expect(cache.get('ns', 'made')).toBeUndefined(), { timeoutMs: 5000, intervalMs: 20 });
  });
});
