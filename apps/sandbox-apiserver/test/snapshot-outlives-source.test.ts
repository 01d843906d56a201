import { ANNOTATIONS, ClaimIndex, NodeInventorySchema, parseObject, statusForError, type NodeInventory } from '@sandbox-scale/scale-core';
import { SandboxdClientSet, type SandboxdClient } from '@sandbox-scale/sandboxd-client';
import { startSim, type Sim } from '@sandbox-scale/sandboxd-sim';
import { deleteSandbox } from '../src/storage/delete-sandbox';
import { LifecycleStorage } from '../src/storage/lifecycle-storage';
import { NodeRouter } from '../src/storage/node-router';
import { Revisions } from '../src/storage/revisions';
import { SandboxStorage } from '../src/storage/sandbox-storage';
import { SandboxCache } from '../src/storage/sandbox-cache';
import { MAX_SNAPSHOT_LABEL, ownerTag } from '../src/storage/snapshot-owner';
import { WatchHub } from '../src/storage/watch-hub';
import { publishedInventory } from './fleet-fixture';

const TOKEN = 'unit-fleet-token';
const TENANT_TOKEN = 'unit-tenant-token';
const NS = 'team-a';
const OTHER_NS = 'team-b';
const TEMPLATE = 'registry.local/outlive:1';

let sim: Sim;
let clients: SandboxdClientSet;
let tenantClients: SandboxdClientSet;

beforeAll(async () => {
  sim = await startSim({
    nodes: 2,
    speed: 0,
    token: TOKEN,
    tenants: [{ name: 'node-tenant', token: TENANT_TOKEN, maxClaims: 0 }],
    pools: [{ template: TEMPLATE, warm: 6 }],
  });
  for (const n of sim.nodes) sim.node(n.name).tick();
  clients = new SandboxdClientSet({ token: TOKEN });
  tenantClients = new SandboxdClientSet({ token: TENANT_TOKEN });
});

afterAll(async () => {
  await clients?.close();
  await tenantClients?.close();
  await sim?.stop();
});

const nodeClient = (i: number): SandboxdClient => clients.forNode(sim.nodes[i]?.url ?? '');
const nodeName = (i: number): string => sim.nodes[i]?.name ?? '';

/** Every node's inventory as its publisher writes it now; `extra` adds nodes only the inventory knows. */
async function inventories(extra: readonly NodeInventory[] = []): Promise<NodeInventory[]> {
  const published = await Promise.all(sim.nodes.map((n, i) => publishedInventory(nodeClient(i), n.name, n.addr)));
  return [...published, ...extra];
}

/**
 * A replica's storage built from nothing but the published inventories, as after a restart
 * or on the other replica: it has never seen the snapshots being taken.
 */
function freshReplica(invs: readonly NodeInventory[]): { lifecycle: LifecycleStorage; storage: SandboxStorage } {
  const revisions = new Revisions();
  const view = new SandboxCache({ graceMs: 50, hub: new WatchHub(10), revisions });
  for (const inv of invs) view.upsertInventory(inv);
  const storage = new SandboxStorage(view, new ClaimIndex({ maxBytes: 1 << 20 }), new NodeRouter(view, clients), revisions);
  return { lifecycle: new LifecycleStorage(storage), storage };
}

async function statusOf(p: Promise<unknown>): Promise<ReturnType<typeof statusForError>> {
  try {
    await p;
  } catch (err) {
    return statusForError(err);
  }
  throw new Error('expected the call to fail');
}

type SnapshotList = {
  kind: string;
  items: { snapshotID: string; name?: string; sandboxID: string; nodeName: string }[];
  unreachableNodes?: string[];
};

const list = async (lifecycle: LifecycleStorage, ns: string, name: string): Promise<SnapshotList> =>
  (await lifecycle.act(ns, name, 'snapshots', {}, false)) as unknown as SnapshotList;

describe('snapshots outlive their source sandbox', () => {
  it('stay listable, claimable and deletable through a fresh replica after the source is deleted; another namespace reaches none of them', async () => {
    // the source lives on the second node: nothing points the lookup there but the checkpoint itself
    const src = await nodeClient(1).claim({ template: TEMPLATE, claimRef: `${NS}/src` });
    const first = freshReplica(await inventories());
    const made = (await first.lifecycle.act(NS, 'src', 'snapshot', { name: 'after-setup' }, false)) as {
      snapshotID: string;
      name?: string;
    };
    expect(made.name).toBe('after-setup');
    // one taken on the node before snapshots carried their owner: reachable only while the source lives
    const legacy = await nodeClient(1).checkpoint(src.id, { name: 'legacy' });
    expect((await list(first.lifecycle, NS, 'src')).items.map((i) => i.snapshotID).sort()).toEqual([made.snapshotID, legacy.id].sort());

    await deleteSandbox(first.storage, NS, 'src', { dryRun: false, body: undefined });
    expect((await nodeClient(1).sandboxes()).some((r) => r.id === src.id)).toBe(false);

    const replica = freshReplica(await inventories());
    await expect(replica.storage.get(NS, 'src')).rejects.toThrow('not found');
    const after = await list(replica.lifecycle, NS, 'src');
    expect(after.items).toEqual([
      expect.objectContaining({ snapshotID: made.snapshotID, name: 'after-setup', sandboxID: src.id, nodeName: nodeName(1) }),
    ]);
    expect(after.unreachableNodes).toBeUndefined();

    // tenancy: the same name in another namespace, and another name here, reach nothing
    expect(await statusOf(list(replica.lifecycle, OTHER_NS, 'src'))).toMatchObject({ code: 404, reason: 'NotFound' });
    expect(
      await statusOf(replica.lifecycle.act(OTHER_NS, 'src', 'claimsnapshot', { snapshot: made.snapshotID, name: 'stolen' }, false)),
    ).toMatchObject({ code: 404 });
    expect(await statusOf(replica.lifecycle.act(OTHER_NS, 'src', 'deletesnapshot', { snapshot: made.snapshotID }, false))).toMatchObject({
      code: 404,
    });
    expect(
      await statusOf(replica.lifecycle.act(NS, 'src-other', 'claimsnapshot', { snapshot: made.snapshotID, name: 'stolen' }, false)),
    ).toMatchObject({ code: 404 });
    expect((await nodeClient(0).sandboxes()).concat(await nodeClient(1).sandboxes()).some((r) => r.claimRef?.includes('stolen'))).toBe(
      false,
    );

    const claimed = (await replica.lifecycle.act(NS, 'src', 'claimsnapshot', { snapshot: made.snapshotID, name: 'branch' }, false)) as {
      kind: string;
      metadata: { name: string; annotations?: Record<string, string> };
      status: { nodeName: string };
    };
    expect(claimed).toMatchObject({ kind: 'Sandbox', metadata: { name: 'branch' }, status: { nodeName: nodeName(1) } });
    const branchId = claimed.metadata.annotations?.[ANNOTATIONS.claimId] ?? '';
    expect((await nodeClient(1).sandboxes()).find((r) => r.id === branchId)?.fromCheckpoint).toBe(made.snapshotID);
    expect((await replica.storage.get(NS, 'branch')).status.nodeName).toBe(nodeName(1));

    await expect(replica.lifecycle.act(NS, 'src', 'deletesnapshot', { snapshot: made.snapshotID }, false)).resolves.toMatchObject({
      snapshotID: made.snapshotID,
      nodeName: nodeName(1),
    });
    expect((await nodeClient(1).checkpoints()).map((c) => c.id)).not.toContain(made.snapshotID);
    // neither a sandbox nor a snapshot of that name is left: the name is gone
    expect(await statusOf(list(replica.lifecycle, NS, 'src'))).toMatchObject({ code: 404, reason: 'NotFound' });
  });

  it('names a node it cannot ask instead of answering 404 for what that node may hold', async () => {
    const src = await nodeClient(0).claim({ template: TEMPLATE, claimRef: `${NS}/src-far` });
    const first = freshReplica(await inventories());
    const made = (await first.lifecycle.act(NS, 'src-far', 'snapshot', {}, false)) as { snapshotID: string };
    await deleteSandbox(first.storage, NS, 'src-far', { dryRun: false, body: undefined });
    const base = (await inventories())[0] as NodeInventory;
    // a published node whose sandboxd does not answer (nothing listens on port 9 of loopback)
    const ghost = parseObject(NodeInventorySchema, {
      ...base,
      metadata: { ...base.metadata, name: 'ghost' },
      node: 'ghost',
      address: '127.0.0.1:9',
      entries: [],
    });
    const replica = freshReplica(await inventories([ghost]));
    const listed = await list(replica.lifecycle, NS, 'src-far');
    expect(listed.items.map((i) => i.snapshotID)).toEqual([made.snapshotID]);
    expect(listed.unreachableNodes).toEqual(['ghost']);
    const missing = await statusOf(replica.lifecycle.act(NS, 'src-far', 'deletesnapshot', { snapshot: 'ck_0000000000000000' }, false));
    expect(missing).toMatchObject({ code: 503, reason: 'ServiceUnavailable' });
    expect(missing.message).toContain('"ghost"');
    expect(src.id).toMatch(/^sb_/);
  });

  it('ignores a checkpoint a node tenant took under the digest of a name it does not own', async () => {
    const own = await nodeClient(0).claim({ template: TEMPLATE, claimRef: `${NS}/src-forged` });
    const tenant = tenantClients.forNode(sim.nodes[0]?.url ?? '');
    const theirs = await tenant.claim({ template: TEMPLATE, noRedirect: true });
    const forged = await tenant.checkpoint(theirs.id, { sandboxToken: theirs.token, name: ownerTag(NS, 'src-forged') });
    const replica = freshReplica(await inventories());
    const made = (await replica.lifecycle.act(NS, 'src-forged', 'snapshot', {}, false)) as { snapshotID: string };
    const ids = (await list(replica.lifecycle, NS, 'src-forged')).items.map((i) => i.snapshotID);
    expect(ids).toEqual([made.snapshotID]);
    expect(ids).not.toContain(forged.id);
    expect(own.id).not.toBe(theirs.id);
  });

  it('refuses a label that leaves no room for the owner digest with 422 naming the field, before the node is asked', async () => {
    await nodeClient(0).claim({ template: TEMPLATE, claimRef: `${NS}/src-label` });
    const replica = freshReplica(await inventories());
    const before = (await nodeClient(0).checkpoints()).length;
    const s = await statusOf(replica.lifecycle.act(NS, 'src-label', 'snapshot', { name: 'x'.repeat(MAX_SNAPSHOT_LABEL + 1) }, false));
    expect(s).toMatchObject({ code: 422, reason: 'Invalid' });
    expect(s.details?.causes?.map((c) => c.field)).toEqual(['name']);
    expect((await nodeClient(0).checkpoints()).length).toBe(before);
    const longest = (await replica.lifecycle.act(NS, 'src-label', 'snapshot', { name: 'y'.repeat(MAX_SNAPSHOT_LABEL) }, false)) as {
      name?: string;
    };
    expect(longest.name).toBe('y'.repeat(MAX_SNAPSHOT_LABEL));
  });
});
