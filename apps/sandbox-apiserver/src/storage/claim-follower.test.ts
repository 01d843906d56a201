import { randomBytes } from 'node:crypto';
import { OwnerRefKey, type NodeInventory } from '@sandbox-scale/scale-core';
import type { SandboxEvent } from '../resource/events';
import { WatchHub } from './watch-hub';
import { ClaimFollower, entryOfClaim, followedClaimOf } from './claim-follower';
import { Revisions } from './revisions';
import { SandboxCache } from './sandbox-cache';

const NOW = new Date('2026-11-30T12:00:10Z');
const KEY = new OwnerRefKey(randomBytes(32));
const READY_AT = '2026-11-30T12:00:00Z';

const claimObject = (o: { name?: string; sandbox?: Record<string, string>; ready?: 'True' | 'False'; readyAt?: string } = {}) => ({
  apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
  kind: 'SandboxClaim',
  metadata: { name: o.name ?? 'c1', namespace: 'team-a', uid: '6f1c2a4e-0000-4000-8000-000000000001', resourceVersion: '41' },
  spec: { warmPoolRef: { name: 'pool' } },
  status: {
    sandbox: o.sandbox ?? {
      name: o.name ?? 'c1',
      claimID: 'sb_0123456789abcdef',
      nodeName: 'node-a',
      address: '10.1.2.3:7777',
      deadline: '2026-11-30T12:15:00Z',
    },
    conditions: [
      { type: 'Bound', status: o.ready ?? 'True', reason: 'NodeLocalClaim', message: 'm', lastTransitionTime: o.readyAt ?? READY_AT },
      { type: 'Ready', status: o.ready ?? 'True', reason: 'NodeLocalClaim', message: 'm', lastTransitionTime: o.readyAt ?? READY_AT },
    ],
  },
});

const inventory = (rv: string, entries: NodeInventory['entries']): NodeInventory => ({
  apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
  kind: 'NodeInventory',
  metadata: { name: 'node-a', resourceVersion: rv, creationTimestamp: '2026-11-30T11:00:00Z' },
  node: 'node-a',
  address: '10.1.2.3:7777',
  ...(entries ? { entries } : {}),
});

function setup() {
  const hub = new WatchHub(100);
  const cache = new SandboxCache({ graceMs: 50, hub, revisions: new Revisions(), overlayTtlMs: 60_000 });
  const events: SandboxEvent[] = [];
  hub.subscribe((e) => events.push(e));
  cache.upsertInventory(inventory('10', []));
  cache.live = true;
  return { cache, events, follower: new ClaimFollower({ cache, windowMs: 120_000, refKey: KEY, now: () => NOW }) };
}

describe('followedClaimOf', () => {
  it('keeps the served name, the node claim id, node, address and the time Ready turned True', () => {
    expect(followedClaimOf(claimObject())).toEqual({
      metadata: { name: 'c1', namespace: 'team-a', uid: '6f1c2a4e-0000-4000-8000-000000000001', resourceVersion: '41' },
      sandboxName: 'c1',
      claimId: 'sb_0123456789abcdef',
      node: 'node-a',
      address: '10.1.2.3:7777',
      deadline: '2026-11-30T12:15:00Z',
      readySince: READY_AT,
    });
  });

  it('reads a status written before claimID existed (the id in name) as the claim-named Sandbox', () => {
    const c = followedClaimOf(claimObject({ sandbox: { name: 'sb_77', nodeName: 'node-a' } }));
    expect([c.sandboxName, c.claimId]).toEqual(['c1', 'sb_77']);
  });

  it('names the field of a claim that does not parse', () => {
    expect(() => followedClaimOf({ ...claimObject(), spec: {} })).toThrow(/warmPoolRef/);
  });
});

describe('entryOfClaim', () => {
  it('is nothing for a claim that is not Ready, or Ready for longer than the window', () => {
    expect(entryOfClaim(followedClaimOf(claimObject({ ready: 'False' })), NOW, 120_000, KEY)).toBeUndefined();
    expect(entryOfClaim(followedClaimOf(claimObject({ readyAt: '2026-11-30T11:00:00Z' })), NOW, 120_000, KEY)).toBeUndefined();
  });
});

describe('ClaimFollower', () => {
  it("serves a Ready claim's Sandbox at once, Ready with the node address's IP, as ADDED", () => {
    const { cache, events, follower } = setup();
    follower.upsert(followedClaimOf(claimObject()));
    const row = cache.get('team-a', 'c1');
    expect(row).toBeDefined();
    const s = cache.objectOf(row!);
    expect(s.status.podIPs).toEqual(['10.1.2.3']);
    expect(s.status.nodeName).toBe('node-a');
    expect(s.status.conditions.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect(s.metadata.labels['sandbox.cocoonstack.io/claim']).toBe('c1');
    expect(events.map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual(['ADDED c1']);
  });

  it('keeps the uid when the node publishes the sandbox, and does not serve it twice', () => {
    const { cache, events, follower } = setup();
    const claim = followedClaimOf(claimObject());
    follower.upsert(claim);
    const uid = cache.objectOf(cache.get('team-a', 'c1')!).metadata.uid;
    cache.upsertInventory(
      inventory('11', [
        {
          name: 'team-a/c1',
          id: 'sb_0123456789abcdef',
          phase: 'Running',
          claimRef: `SandboxClaim:${claim.metadata.uid}:team-a/c1`,
          addr: '10.1.2.3:7777',
          claimedAt: READY_AT,
        },
      ]),
    );
    const published = cache.get('team-a', 'c1')!;
    expect(published.created).toBeUndefined();
    expect(cache.objectOf(published).metadata.uid).toBe(uid);
    follower.upsert(claim);
    expect(cache.get('team-a', 'c1')).toBe(published);
    expect(events.map((e) => e.type)).toEqual(['ADDED', 'MODIFIED']);
  });

  it('hides the sandbox of a deleted claim', () => {
    const { cache, events, follower } = setup();
    const claim = followedClaimOf(claimObject());
    follower.upsert(claim);
    follower.remove(claim);
    expect(cache.get('team-a', 'c1')).toBeUndefined();
    expect(events.map((e) => e.type)).toEqual(['ADDED', 'DELETED']);
  });
});
