import { ANNOTATIONS, parseOwnerRef } from '@sandbox-scale/scale-core';
import type { SandboxdClient } from '@sandbox-scale/sandboxd-client';
import type { LifecycleStorage } from '../src/storage/lifecycle-storage';
import type { SandboxStorage } from '../src/storage/sandbox-storage';
import { startStorageFleet, statusOf, type StorageFleet } from './fleet-fixture';

const NS = 'team-a';

let fleet: StorageFleet;
let direct: SandboxdClient;
let node = '';

beforeAll(async () => {
  fleet = await startStorageFleet({ token: 'unit-fleet-token', template: 'registry.local/snap:1', warm: 6 });
  ({ direct, node } = fleet);
});

afterAll(async () => {
  await fleet?.stop();
});

/** A fresh apiserver storage over the sim node, with `names` claimed on it and published. */
const setup = (names: readonly string[]): Promise<{ lifecycle: LifecycleStorage; storage: SandboxStorage }> => fleet.storageWith(NS, names);

/** Checkpoints the sandbox through the `snapshot` action; the new snapshot's id. */
async function snapshotOf(lifecycle: LifecycleStorage, name: string): Promise<string> {
  const r = (await lifecycle.act(NS, name, 'snapshot', {}, false)) as { snapshotID?: unknown };
  if (typeof r.snapshotID !== 'string') throw new Error('snapshot answered no id');
  return r.snapshotID;
}

type SnapshotList = { kind: string; items: { snapshotID: string; name?: string; sandboxID: string; nodeName: string }[] };

describe('snapshot subresources', () => {
  it('lists only this sandbox checkpoints, claims a listed sandbox with the token, deletes with 404 after', async () => {
    const { lifecycle, storage } = await setup(['src-a', 'src-b']);
    const made = (await lifecycle.act(NS, 'src-a', 'snapshot', { name: 'after-setup' }, false)) as Record<string, unknown>;
    expect(made).toMatchObject({ kind: 'SandboxSnapshotResult', name: 'after-setup', nodeName: node });
    await lifecycle.act(NS, 'src-b', 'snapshot', {}, false);
    const id = String(made.snapshotID);

    const list = (await lifecycle.act(NS, 'src-a', 'snapshots', {}, false)) as unknown as SnapshotList;
    expect(list.kind).toBe('SandboxSnapshotList');
    expect(list.items.map((i) => i.snapshotID)).toEqual([id]);
    expect(list.items[0]).toMatchObject({ name: 'after-setup', nodeName: node });

    const claimed = (await lifecycle.act(
      NS,
      'src-a',
      'claimsnapshot',
      { kind: 'SandboxClaimSnapshotOptions', snapshot: id, name: 'branch-1' },
      false,
    )) as { kind: string; metadata: { name: string; annotations?: Record<string, string> } };
    expect(claimed.kind).toBe('Sandbox');
    expect(claimed.metadata.name).toBe('branch-1');
    expect(claimed.metadata.annotations?.[ANNOTATIONS.token]).toBeTruthy();
    // listed at once, and a read never carries the token
    const got = await storage.get(NS, 'branch-1');
    expect(got.status.nodeName).toBe(node);
    expect(got.metadata.annotations?.[ANNOTATIONS.token]).toBeUndefined();
    const onNode = await direct.sandboxes();
    const branch = onNode.find((s) => s.id === claimed.metadata.annotations?.[ANNOTATIONS.claimId]);
    // owned by this snapshot claim: kind, namespace, name and a uid of its own
    expect(parseOwnerRef(branch?.claimRef)).toMatchObject({
      kind: 'SnapshotClaim',
      namespace: NS,
      name: 'branch-1',
      uid: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });

    await expect(lifecycle.act(NS, 'src-a', 'deletesnapshot', { snapshot: id }, false)).resolves.toMatchObject({
      kind: 'SandboxDeleteSnapshotResult',
      snapshotID: id,
    });
    expect(((await lifecycle.act(NS, 'src-a', 'snapshots', undefined, false)) as unknown as SnapshotList).items).toEqual([]);
    const again = await statusOf(lifecycle.act(NS, 'src-a', 'deletesnapshot', { snapshot: id }, false));
    expect(again).toMatchObject({ code: 404, reason: 'NotFound' });
  });

  it('refuses to reach another sandbox checkpoint through this one (404), and a taken name (409)', async () => {
    const { lifecycle } = await setup(['own-a', 'own-b']);
    const other = await snapshotOf(lifecycle, 'own-b');
    expect(await statusOf(lifecycle.act(NS, 'own-a', 'claimsnapshot', { snapshot: other, name: 'stolen' }, false))).toMatchObject({
      code: 404,
      reason: 'NotFound',
    });
    expect(await statusOf(lifecycle.act(NS, 'own-a', 'deletesnapshot', { snapshot: other }, false))).toMatchObject({ code: 404 });
    expect(await statusOf(lifecycle.act(NS, 'own-b', 'claimsnapshot', { snapshot: other, name: 'own-a' }, false))).toMatchObject({
      code: 409,
      reason: 'AlreadyExists',
    });
    expect(await statusOf(lifecycle.act(NS, 'missing', 'snapshots', {}, false))).toMatchObject({ code: 404, reason: 'NotFound' });
  });

  it('answers 400 naming the field for a bad body, before calling the node', async () => {
    const { lifecycle } = await setup(['bad-a']);
    const noSnap = await statusOf(lifecycle.act(NS, 'bad-a', 'deletesnapshot', {}, false));
    expect(noSnap).toMatchObject({ code: 400, reason: 'BadRequest' });
    expect(noSnap.details?.causes).toEqual([expect.objectContaining({ field: 'snapshot', reason: 'FieldValueRequired' })]);
    const badName = await statusOf(lifecycle.act(NS, 'bad-a', 'claimsnapshot', { snapshot: 'ck_x', name: 'Not_A_Name' }, false));
    expect(badName.code).toBe(400);
    expect(badName.details?.causes?.map((c) => c.field)).toEqual(['name']);
    expect(badName.message).toContain('name');
    const noName = await statusOf(lifecycle.act(NS, 'bad-a', 'claimsnapshot', { snapshot: 'ck_x' }, false));
    expect(noName.details?.causes).toEqual([expect.objectContaining({ field: 'name', reason: 'FieldValueRequired' })]);
    expect(await statusOf(lifecycle.act(NS, 'bad-a', 'snapshots', { kind: 'SandboxPauseOptions' }, false))).toMatchObject({ code: 400 });
    expect(
      await statusOf(lifecycle.act(NS, 'bad-a', 'claimsnapshot', { snapshot: 'ck_x', name: 'ok', ttlSeconds: -1 }, false)),
    ).toMatchObject({ code: 400 });
  });

  it('spends nothing on a dry run', async () => {
    const { lifecycle, storage } = await setup(['dry-a']);
    const id = await snapshotOf(lifecycle, 'dry-a');
    const before = (await direct.sandboxes()).length;
    await expect(lifecycle.act(NS, 'dry-a', 'claimsnapshot', { snapshot: id, name: 'dry-branch' }, true)).resolves.toMatchObject({
      kind: 'Sandbox',
      metadata: { name: 'dry-branch' },
    });
    await expect(lifecycle.act(NS, 'dry-a', 'deletesnapshot', { snapshot: id }, true)).resolves.toMatchObject({ snapshotID: id });
    expect((await direct.sandboxes()).length).toBe(before);
    expect(((await lifecycle.act(NS, 'dry-a', 'snapshots', {}, false)) as unknown as SnapshotList).items.map((i) => i.snapshotID)).toEqual([
      id,
    ]);
    await expect(storage.get(NS, 'dry-branch')).rejects.toThrow('not found');
  });

  it('maps a node refusing claims (429) to TooManyRequests with a retry hint', async () => {
    const { lifecycle, storage } = await setup(['busy-a']);
    const id = await snapshotOf(lifecycle, 'busy-a');
    fleet.sim.node(node).state.draining = true;
    try {
      const s = await statusOf(lifecycle.act(NS, 'busy-a', 'claimsnapshot', { snapshot: id, name: 'busy-branch' }, false));
      expect(s).toMatchObject({ code: 429, reason: 'TooManyRequests' });
      expect(s.details?.retryAfterSeconds).toBeGreaterThan(0);
    } finally {
      fleet.sim.node(node).state.draining = false;
    }
    await expect(storage.get(NS, 'busy-branch')).rejects.toThrow('not found');
  });
});

describe('fork children', () => {
  it('are owned by the fork call, served under a valid name <parent>-<child id>, and listed at once', async () => {
    const { lifecycle, storage } = await setup(['fork-src']);
    const r = (await lifecycle.act(NS, 'fork-src', 'fork', { count: 2 }, false)) as { children: { name: string; sandboxID: string }[] };
    expect(r.children).toHaveLength(2);
    const rows = await direct.sandboxes();
    const owners = r.children.map((c) => parseOwnerRef(rows.find((row) => row.id === c.sandboxID)?.claimRef));
    for (const [i, o] of owners.entries())
      expect(o).toMatchObject({ kind: 'ForkChild', namespace: NS, name: `fork-src-${r.children[i]?.sandboxID}` });
    // one uid per fork call, never a SandboxClaim reference
    expect(new Set(owners.map((o) => (o && o.kind !== 'legacy' ? o.uid : ''))).size).toBe(1);
    // the node's ids hold `_`; object names are DNS-1123 subdomains
    for (const c of r.children) expect(c.name).toBe(`fork-src-${c.sandboxID.replaceAll('_', '-')}`);
    for (const c of r.children) expect(c.name).toMatch(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/);
    const child = await storage.get(NS, r.children[0]?.name ?? '');
    expect(child.metadata.name).toBe(r.children[0]?.name);
    expect(child.metadata.annotations?.[ANNOTATIONS.claimId]).toBe(r.children[0]?.sandboxID);
  });

  it('refuses a parent whose name leaves its children no valid name (over 253 characters) with 422, before the node forks', async () => {
    const longest = `p${'a'.repeat(232)}`;
    const tooLong = `${longest}b`;
    const { lifecycle } = await setup([longest, tooLong]);
    const before = (await direct.sandboxes()).length;
    const s = await statusOf(lifecycle.act(NS, tooLong, 'fork', { count: 1 }, false));
    expect(s).toMatchObject({ code: 422, reason: 'Invalid' });
    expect(s.details?.causes?.map((c) => c.field)).toEqual(['metadata.name']);
    expect((await direct.sandboxes()).length).toBe(before);
    const r = (await lifecycle.act(NS, longest, 'fork', { count: 1 }, false)) as { children: { name: string }[] };
    expect(r.children[0]?.name.length).toBe(253);
    expect(r.children[0]?.name).toMatch(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/);
  });
});
