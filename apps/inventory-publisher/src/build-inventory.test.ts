import type { NodeInfo, SandboxRow } from '@sandbox-scale/sandboxd-client';
import { NodeInventorySchema, parseObject } from '@sandbox-scale/scale-core';
import { buildInventory, keepTransitionTimes, markStale, sameInventory } from './build-inventory';

const info = (over: Partial<NodeInfo> = {}): NodeInfo => ({
  pools: [
    { key: { template: 'img:b', net: 'none', size: 'small' }, warm: 2, refilling: 0, target: 3, golden: true },
    { key: { template: 'img:a', net: 'egress', size: 'medium' }, warm: 1, refilling: 1, target: 1, golden: true },
  ],
  claimed: 2,
  hibernated: 0,
  archived: 0,
  draining: false,
  atCapacity: false,
  peers: [],
  ...over,
});

const row = (over: Partial<SandboxRow> & { id: string }): SandboxRow => ({
  key: { template: 'img:b', net: 'none', size: 'small' },
  deadline: new Date('2030-01-02T03:04:05.678Z'),
  hibernated: false,
  archived: false,
  ...over,
});

const now = new Date('2030-01-01T00:00:00Z');

describe('buildInventory', () => {
  it('names entries after claim_ref, else the id, and carries id, phase, addr, deadline and claimedAt', () => {
    const body = buildInventory({
      node: 'n1',
      address: '10.0.0.1:7777',
      rows: [row({ id: 'sb_2' }), row({ id: 'sb_1', claimRef: 'ns/a', claimedAt: new Date('2029-12-31T23:59:59.9Z'), hibernated: true })],
      info: info(),
      now,
    });
    expect(body.entries).toEqual([
      {
        name: 'ns/a',
        id: 'sb_1',
        phase: 'Hibernated',
        claimRef: 'ns/a',
        addr: '10.0.0.1:7777',
        deadline: '2030-01-02T03:04:05Z',
        claimedAt: '2029-12-31T23:59:59Z',
      },
      { name: 'sb-2', id: 'sb_2', phase: 'Running', addr: '10.0.0.1:7777', deadline: '2030-01-02T03:04:05Z' },
    ]);
    expect(parseObject(NodeInventorySchema, body).node).toBe('n1');
  });

  it('serves an owner reference under the owner namespace/name and keeps the whole reference', () => {
    const ref = 'sandbox:0b3e6f0c-2d7a-4a55-9c51-6a0f3f1d2e4b:team-a/job-1';
    const body = buildInventory({
      node: 'n1',
      address: '',
      rows: [row({ id: 'sb_1', claimRef: ref }), row({ id: 'sb_2', claimRef: 'not an owner' })],
      info: info(),
      now,
    });
    expect(body.entries?.map((e) => [e.name, e.claimRef])).toEqual([
      ['sb-2', 'not an owner'],
      ['team-a/job-1', ref],
    ]);
  });

  it('publishes address and every pool, sorted by key, with warm and target', () => {
    const body = buildInventory({ node: 'n1', address: '10.0.0.1:7777', rows: [], info: info(), now });
    expect(body.metadata.name).toBe('n1');
    expect(body.address).toBe('10.0.0.1:7777');
    expect(body.entries).toBeUndefined();
    expect(body.pools).toEqual([
      { template: 'img:a', net: 'egress', size: 'medium', warm: 1, target: 1 },
      { template: 'img:b', net: 'none', size: 'small', warm: 2, target: 3 },
    ]);
  });

  it('adds a Draining condition while sandboxd is cordoned', () => {
    const body = buildInventory({ node: 'n1', address: 'a:1', rows: [], info: info({ draining: true }), now });
    expect(body.conditions).toEqual([
      expect.objectContaining({ type: 'Draining', status: 'True', reason: 'NodeDraining', lastTransitionTime: '2030-01-01T00:00:00Z' }),
    ]);
  });

  it('is deterministic: the same state gives an equal body whatever the row order', () => {
    const a = buildInventory({ node: 'n1', address: 'a:1', rows: [row({ id: 'x' }), row({ id: 'y' })], info: info(), now });
    const b = buildInventory({ node: 'n1', address: 'a:1', rows: [row({ id: 'y' }), row({ id: 'x' })], info: info(), now });
    expect(sameInventory(a, b)).toBe(true);
    const c = buildInventory({ node: 'n1', address: 'a:1', rows: [row({ id: 'y' })], info: info(), now });
    expect(sameInventory(a, c)).toBe(false);
  });
});

describe('markStale and keepTransitionTimes', () => {
  it('keeps the last report and adds Stale=True SandboxdUnreachable, keeping the first transition time', () => {
    const last = buildInventory({ node: 'n1', address: 'a:1', rows: [row({ id: 'x' })], info: info(), now });
    const first = markStale(last, 'down', new Date('2030-01-01T00:01:00Z'));
    expect(first.entries).toEqual(last.entries);
    expect(first.conditions).toEqual([
      expect.objectContaining({ type: 'Stale', status: 'True', reason: 'SandboxdUnreachable', message: 'down' }),
    ]);
    const again = keepTransitionTimes(first, markStale(first, 'down', new Date('2030-01-01T00:02:00Z')));
    expect(again.conditions?.[0]?.lastTransitionTime).toBe('2030-01-01T00:01:00Z');
    expect(sameInventory(first, again)).toBe(true);
  });
});
