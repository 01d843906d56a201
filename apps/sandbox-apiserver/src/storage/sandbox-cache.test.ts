import {
  ClaimIndex,
  parseLabelSelector,
  parseFieldSelector,
  EVERYTHING_LABEL_SELECTOR,
  SANDBOX_PHASES,
  synthesizeSandbox,
  type NodeInventory,
} from '@sandbox-scale/scale-core';
import { eventually } from '@sandbox-scale/e2e';
import type { SandboxEvent } from '../resource/events';
import { WatchHub } from './watch-hub';
import { NodeRouter } from './node-router';
import { parseListQuery } from '../http/list-query';
import { Revisions } from './revisions';
import { SandboxStorage } from './sandbox-storage';
import { SandboxCache } from './sandbox-cache';

const inv = (node: string, rv: string, entries: Array<{ name: string; phase: string; id?: string }>): NodeInventory => ({
  apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
  kind: 'NodeInventory',
  metadata: { name: node, resourceVersion: rv, creationTimestamp: '2026-01-01T00:00:00Z' },
  node,
  entries,
});

function setup(graceMs = 50, overlayTtlMs?: number) {
  const hub = new WatchHub(100);
  const revisions = new Revisions();
  const cache = new SandboxCache({ graceMs, hub, revisions, ...(overlayTtlMs === undefined ? {} : { overlayTtlMs }) });
  const storage = new SandboxStorage(cache, new ClaimIndex({ maxBytes: 1 << 20 }), new NodeRouter(cache, undefined), revisions);
  const events: SandboxEvent[] = [];
  hub.subscribe((e) => events.push(e));
  cache.live = true;
  return { cache, storage, events, hub };
}

const q = (ns: string, params: Record<string, string> = {}) => parseListQuery(ns, new URLSearchParams(params));

describe('SandboxCache + SandboxStorage', () => {
  it('lists every node sorted by namespace then name, with selectors', () => {
    const { cache, storage } = setup();
    cache.upsertInventory(
      inv('n1', '10', [
        { name: 'ns-b/s2', phase: 'Pending' },
        { name: 'ns-a/s1', phase: 'Running' },
      ]),
    );
    cache.upsertInventory(
      inv('n2', '11', [
        { name: 'ns-a/s3', phase: 'Running' },
        { name: 'ns-a-b/s0', phase: 'Running' },
      ]),
    );
    expect(storage.list(q('')).items.map((s) => `${s.metadata.namespace}/${s.metadata.name}`)).toEqual([
      'ns-a/s1',
      'ns-a/s3',
      'ns-a-b/s0',
      'ns-b/s2',
    ]);
    expect(storage.list(q('ns-a')).items).toHaveLength(2);
    expect(storage.list(q('', { labelSelector: 'sandbox.cocoonstack.io/phase in (Pending)' })).items.map((s) => s.metadata.name)).toEqual([
      's2',
    ]);
    expect(storage.list(q('', { fieldSelector: 'status.nodeName=n2' })).items.map((s) => s.metadata.name)).toEqual(['s3', 's0']);
    expect(() => q('', { fieldSelector: 'spec.foo=1' })).toThrow(expect.objectContaining({ code: 400 }));
    expect(parseLabelSelector('a').requirements).toHaveLength(1);
    expect(parseFieldSelector('').requirements).toHaveLength(0);
    expect(EVERYTHING_LABEL_SELECTOR.requirements).toHaveLength(0);
  });

  it('pages with limit and continue', () => {
    const { cache, storage } = setup();
    cache.upsertInventory(
      inv('n1', '5', [
        { name: 'a/x1', phase: 'R' },
        { name: 'a/x2', phase: 'R' },
        { name: 'a/x3', phase: 'R' },
      ]),
    );
    const first = storage.list(q('', { limit: '2' }));
    expect(first.items.map((s) => s.metadata.name)).toEqual(['x1', 'x2']);
    const second = storage.list(q('', { limit: '2', continue: first.metadata.continue ?? '' }));
    expect(second.items.map((s) => s.metadata.name)).toEqual(['x3']);
    expect(second.metadata.continue).toBeUndefined();
  });

  it('serves increasing resourceVersions and emits one event per change', () => {
    const { cache, events } = setup();
    cache.upsertInventory(inv('n1', '7', [{ name: 'a/x', phase: 'Pending' }]));
    cache.upsertInventory(
      inv('n1', '8', [
        { name: 'a/x', phase: 'Running' },
        { name: 'a/y', phase: 'Running' },
      ]),
    );
    cache.upsertInventory(inv('n1', '9', [{ name: 'a/y', phase: 'Running' }]));
    expect(events.map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual(['ADDED x', 'MODIFIED x', 'ADDED y', 'DELETED x']);
    const revs = events.map((e) => e.rev);
    expect([...revs].sort((a, b) => a - b)).toEqual(revs);
    expect(new Set(revs).size).toBe(revs.length);
  });

  it('keeps a vanished inventory for the grace period: no DELETED/ADDED when it comes back', async () => {
    const { cache, events, storage } = setup(200);
    cache.upsertInventory(inv('n1', '3', [{ name: 'a/x', phase: 'Running' }]));
    cache.removeInventory('n1');
    cache.upsertInventory(inv('n1', '4', [{ name: 'a/x', phase: 'Running' }]));
    expect(events.map((e) => e.type)).toEqual(['ADDED']);
    cache.removeInventory('n1');
    expect(storage.list(q('')).items).toHaveLength(1);
    await eventually(() => expect(events.map((e) => e.type)).toEqual(['ADDED', 'DELETED']), { timeoutMs: 5_000, intervalMs: 20 });
    expect(storage.list(q('')).items).toHaveLength(0);
  });

  it('carries the previous object on MODIFIED, so a watch can tell a sandbox left its selector', () => {
    const { cache, events } = setup();
    cache.upsertInventory(inv('n1', '7', [{ name: 'a/x', phase: SANDBOX_PHASES.running, id: 'sb_1' }]));
    cache.upsertInventory(inv('n1', '8', [{ name: 'a/x', phase: SANDBOX_PHASES.hibernated, id: 'sb_1' }]));
    const modified = events.find((e) => e.type === 'MODIFIED');
    expect(modified?.prev?.metadata.labels?.['sandbox.cocoonstack.io/phase']).toBe('Running');
    expect(modified?.object.metadata.labels?.['sandbox.cocoonstack.io/phase']).toBe('Hibernated');
    expect(events.find((e) => e.type === 'ADDED')?.prev).toBeUndefined();
  });

  it('keeps a created sandbox through a publish that does not list it yet: no DELETED, then MODIFIED when it is listed', () => {
    const { cache, events, storage } = setup();
    cache.upsertInventory(inv('n1', '7', [{ name: 'a/old', phase: 'Running', id: 'sb_0' }]));
    const entry = { name: 'a/new', id: 'sb_new', phase: SANDBOX_PHASES.running, claimRef: 'a/new' };
    cache.addCreated('n1', entry, synthesizeSandbox('n1', entry, { resourceVersion: '0' }));
    // an inventory built before the claim reached the node
    cache.upsertInventory(
      inv('n1', '8', [
        { name: 'a/old', phase: 'Running', id: 'sb_0' },
        { name: 'a/other', phase: 'Running', id: 'sb_2' },
      ]),
    );
    expect(events.filter((e) => e.object.metadata.name === 'new').map((e) => e.type)).toEqual(['ADDED']);
    expect(storage.list(q('a')).items.map((s) => s.metadata.name)).toEqual(['new', 'old', 'other']);
    cache.upsertInventory(
      inv('n1', '9', [
        { name: 'a/new', phase: 'Running', id: 'sb_new' },
        { name: 'a/old', phase: 'Running', id: 'sb_0' },
        { name: 'a/other', phase: 'Running', id: 'sb_2' },
      ]),
    );
    expect(events.filter((e) => e.object.metadata.name === 'new').map((e) => e.type)).toEqual(['ADDED', 'MODIFIED']);
    // from now on the inventory owns it: leaving the inventory is a deletion
    cache.upsertInventory(inv('n1', '10', [{ name: 'a/old', phase: 'Running', id: 'sb_0' }]));
    expect(events.filter((e) => e.object.metadata.name === 'new').map((e) => e.type)).toEqual(['ADDED', 'MODIFIED', 'DELETED']);
    cache.stop();
  });

  it('drops a created sandbox no inventory ever lists once its overlay expires', async () => {
    const { cache, events, storage } = setup(50, 100);
    cache.upsertInventory(inv('n1', '7', []));
    const entry = { name: 'a/lost', id: 'sb_lost', phase: SANDBOX_PHASES.running };
    cache.addCreated('n1', entry, synthesizeSandbox('n1', entry, { resourceVersion: '0' }));
    cache.upsertInventory(inv('n1', '8', []));
    expect(storage.list(q('a')).items).toHaveLength(1);
    // the overlay's 100 ms TTL runs out on its own timer
    await eventually(() => expect(events.map((e) => e.type)).toEqual(['ADDED', 'DELETED']), { timeoutMs: 5_000, intervalMs: 20 });
    expect(storage.list(q('a')).items).toHaveLength(0);
  });

  it('answers 404 for an unknown sandbox', async () => {
    const { storage } = setup();
    await expect(storage.get('a', 'nope')).rejects.toMatchObject({ reason: 'NotFound', code: 404 });
  });
});

describe('WatchHub', () => {
  it('replays after a resourceVersion and expires history it no longer holds', () => {
    const hub = new WatchHub(2);
    const obj = {} as SandboxEvent['object'];
    for (const rev of [1, 2, 3]) hub.emit({ type: 'ADDED', rev, object: obj });
    expect(hub.since(1).map((e) => e.rev)).toEqual([2, 3]);
    expect(() => hub.since(0)).toThrow('too old resource version');
  });
});

describe('SandboxCache with a split inventory', () => {
  it('serves a node split into parts as one node: rows name the node, only its own object routes', async () => {
    const { cache, storage, events } = setup(20);
    const own: NodeInventory = { ...inv('n1', '10', [{ name: 'a/x1', phase: 'Running', id: 'sb_1' }]), address: '10.0.0.1:7777', parts: 2 };
    const part: NodeInventory = { ...inv('n1.part-1', '11', [{ name: 'a/x2', phase: 'Running', id: 'sb_2' }]), node: 'n1', part: 1 };
    cache.upsertInventory(own);
    cache.upsertInventory(part);
    expect(storage.list(q('')).items.map((s) => [s.metadata.name, s.status.nodeName])).toEqual([
      ['x1', 'n1'],
      ['x2', 'n1'],
    ]);
    expect(cache.inventories().map((i) => i.metadata.name)).toEqual(['n1']);
    expect(cache.inventory('n1')?.address).toBe('10.0.0.1:7777');
    expect(cache.inventory('n1.part-1')).toBeUndefined();
    // an entry moving to the other object is one MODIFIED, never DELETED then ADDED
    cache.upsertInventory({
      ...part,
      metadata: { ...part.metadata, resourceVersion: '12' },
      entries: [
        { name: 'a/x1', phase: 'Running', id: 'sb_1' },
        { name: 'a/x2', phase: 'Running', id: 'sb_2' },
      ],
    });
    cache.upsertInventory({ ...own, metadata: { ...own.metadata, resourceVersion: '13' }, entries: [] });
    expect(events.filter((e) => e.type !== 'ADDED').map((e) => [e.type, e.object.metadata.name])).toEqual([['MODIFIED', 'x1']]);
    expect(storage.list(q('')).items).toHaveLength(2);
    // a deleted part drops its rows after the grace period, the node's own object stays
    cache.removeInventory('n1.part-1');
    await eventually(() => expect(storage.list(q('')).items).toHaveLength(0));
    expect(cache.inventories().map((i) => i.metadata.name)).toEqual(['n1']);
  });
});

describe('SandboxCache.inventories', () => {
  it('hands out one frozen list until an inventory is added, changed or dropped', async () => {
    const { cache } = setup(20);
    cache.upsertInventory(inv('n1', '1', []));
    cache.upsertInventory(inv('n2', '2', []));
    const first = cache.inventories();
    expect(Object.isFrozen(first)).toBe(true);
    expect(cache.inventories()).toBe(first);

    cache.upsertInventory(inv('n1', '3', [{ name: 'a/x', phase: 'Running', id: 'sb_1' }]));
    const changed = cache.inventories();
    expect(changed).not.toBe(first);
    expect(changed.map((i) => [i.node, i.metadata.resourceVersion])).toEqual([
      ['n1', '3'],
      ['n2', '2'],
    ]);
    expect(cache.inventories()).toBe(changed);

    cache.removeInventory('n2');
    await eventually(() => expect(cache.inventories().map((i) => i.node)).toEqual(['n1']));
    expect(Object.isFrozen(cache.inventories())).toBe(true);
  });
});

describe('SandboxCache with claim references a node may have made up', () => {
  /** Proven = what this control plane wrote; here a reference that starts with `ok:`. */
  function proving() {
    const refused: string[] = [];
    const cache = new SandboxCache({
      graceMs: 50,
      hub: new WatchHub(100),
      revisions: new Revisions(),
      proves: (ref) => ref?.startsWith('ok:') === true,
      onShadowRefused: (row, holder) => refused.push(`${row.node}/${row.entry.id ?? ''} kept from ${holder.node}/${holder.entry.id ?? ''}`),
    });
    cache.live = true;
    return { cache, refused };
  }
  const entry = (id: string, claimRef: string) => ({ name: 'team-a/agent-7', phase: 'Running', id, claimRef });

  it('hands a name a node published first to the proven sandbox of another node, and back only when that one goes', () => {
    const { cache, refused } = proving();
    cache.upsertInventory(inv('evil', '1', [entry('sb_forged', 'claim:x:team-a/agent-7')]));
    expect(cache.get('team-a', 'agent-7')).toMatchObject({ node: 'evil', proven: false });
    cache.upsertInventory(inv('real', '2', [entry('sb_real', 'ok:team-a/agent-7')]));
    expect(cache.get('team-a', 'agent-7')).toMatchObject({ node: 'real', proven: true });
    expect(refused).toEqual(['evil/sb_forged kept from real/sb_real']);
    // the forged node publishes again: it does not take the name back
    cache.upsertInventory(inv('evil', '3', [entry('sb_forged', 'claim:y:team-a/agent-7')]));
    expect(cache.get('team-a', 'agent-7')?.node).toBe('real');
    expect(refused).toHaveLength(2);
    // the real sandbox released: the other row is served again, still unproven
    cache.upsertInventory(inv('real', '4', []));
    expect(cache.get('team-a', 'agent-7')).toMatchObject({ node: 'evil', proven: false });
  });

  it('keeps the proven entry when one node reports a name twice, in either order', () => {
    for (const order of [
      [entry('sb_forged', 'claim:x:team-a/agent-7'), entry('sb_real', 'ok:team-a/agent-7')],
      [entry('sb_real', 'ok:team-a/agent-7'), entry('sb_forged', 'claim:x:team-a/agent-7')],
    ]) {
      const { cache, refused } = proving();
      cache.upsertInventory(inv('n1', '1', order));
      expect(cache.get('team-a', 'agent-7')).toMatchObject({ entry: { id: 'sb_real' }, proven: true });
      expect(refused).toHaveLength(1);
    }
  });

  it('proves a row again with the keys held now: a key that left proves nothing, with no new publish', () => {
    const keys = new Set(['k1']);
    const cache = new SandboxCache({
      graceMs: 50,
      hub: new WatchHub(100),
      revisions: new Revisions(),
      proves: (ref) => [...keys].some((k) => ref?.startsWith(`${k}:`) === true),
    });
    cache.live = true;
    cache.upsertInventory(inv('n1', '1', [entry('sb_old', 'k1:team-a/agent-7')]));
    const row = cache.get('team-a', 'agent-7');
    if (row === undefined) throw new Error('no row');
    expect(cache.provenNow(row)).toBe(true);
    // a rotation: the new key signs, the old still verifies
    keys.add('k2');
    expect(cache.provenNow(row)).toBe(true);
    keys.delete('k1');
    expect(row.proven).toBe(true);
    expect(cache.provenNow(row)).toBe(false);
  });
});
