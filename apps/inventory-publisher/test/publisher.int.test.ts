import { Registry } from 'prom-client';
import { applyCrds, eventually, kubectl, runSuffix, testKubeConfig, testKubeconfigPath } from '@sandbox-scale/e2e';
import { applyObject, ResourceClient } from '@sandbox-scale/kube-runtime';
import { captureLog } from '@sandbox-scale/kube-runtime/testing';
import { FIELD_MANAGERS, NodeInventorySchema, parseObject, type NodeInventory } from '@sandbox-scale/scale-core';
import { SandboxdClient } from '@sandbox-scale/sandboxd-client';
import { startSim, type Sim } from '@sandbox-scale/sandboxd-sim';
import { NodeInventoryResource, startPublisher, type RunningPublisher } from '../src/index';

const kc = testKubeConfig();
const inventories = new ResourceClient(kc, NodeInventoryResource);
const TOKEN = 'fleet-secret';
let sim: Sim;
let running: RunningPublisher;
let nodeName: string;
const registry = new Registry();

async function readInventory(): Promise<NodeInventory> {
  return parseObject(NodeInventorySchema, await inventories.get(undefined, nodeName));
}

beforeAll(async () => {
  await applyCrds(kc, 'charts/sandbox-scale/crds');
  sim = await startSim({ nodes: 1, speed: 0, token: TOKEN, pools: [{ template: 'img:pub', warm: 3 }] });
  nodeName = `pub-${runSuffix()}`;
  const { log } = captureLog();
  running = startPublisher({
    nodeName,
    sandboxdUrl: sim.nodes[0]?.url ?? '',
    advertiseAddress: sim.nodes[0]?.addr ?? '',
    publishIntervalMs: 300,
    fleetToken: TOKEN,
    kubeConfig: kc,
    log,
    registry,
  });
});

afterAll(async () => {
  await running?.stop();
  await sim?.stop();
  await inventories.delete(undefined, nodeName).catch(() => undefined);
});

describe('inventory-publisher against a real API server and sandboxd-sim', () => {
  it("publishes one NodeInventory equal to the simulated node's live state", async () => {
    const node = sim.nodes[0];
    if (!node) throw new Error('no sim node');
    const client = new SandboxdClient({ baseUrl: node.url, token: TOKEN });
    await eventually(async () => expect((await client.info()).pools[0]?.warm).toBe(3));
    const claimed = await client.claim({ template: 'img:pub', claimRef: 'team-a/job-1' });
    await eventually(
      async () => {
        const inv = await readInventory();
        const rows = await client.sandboxes();
        const info = await client.info();
        expect(inv.node).toBe(nodeName);
        expect(inv.address).toBe(node.addr);
        expect(inv.entries?.map((e) => [e.name, e.id, e.claimRef])).toEqual(rows.map((r) => [r.claimRef ?? r.id, r.id, r.claimRef]));
        expect(inv.entries?.[0]).toMatchObject({ name: 'team-a/job-1', id: claimed.id, phase: 'Running', claimRef: 'team-a/job-1' });
        expect(inv.pools).toEqual(
          info.pools.map((p) => ({ template: p.key.template, net: p.key.net, size: p.key.size, warm: p.warm, target: p.target })),
        );
        expect(inv.pools?.[0]).toMatchObject({ template: 'img:pub', warm: 3, target: 3 });
      },
      { timeoutMs: 15_000 },
    );
    // Tokens never reach the published object.
    const out = await kubectl(['get', 'nodeinventories', nodeName, '-o', 'json'], { kubeconfig: testKubeconfigPath() });
    expect(out.stdout).not.toContain(claimed.token ?? 'no-token-in-claim');
    expect(out.stdout).not.toContain(TOKEN);
    await client.close();
  });

  it('writes the entries as rows, and an apply removes the entries an earlier publisher wrote', async () => {
    const node = sim.nodes[0];
    if (!node) throw new Error('no sim node');
    const client = new SandboxdClient({ baseUrl: node.url, token: TOKEN });
    const raw = async (): Promise<Record<string, unknown>> =>
      JSON.parse(
        (await kubectl(['get', 'nodeinventories', nodeName, '-o', 'json'], { kubeconfig: testKubeconfigPath() })).stdout,
      ) as Record<string, unknown>;
    const current = await eventually(async () => {
      const inv = await readInventory();
      expect(inv.entries?.length).toBe((await client.sandboxes()).length);
      return inv;
    });
    expect(await raw()).toMatchObject({ rows: expect.any(Array) });
    expect((await raw())['entries']).toBeUndefined();
    // what a publisher before rows left: the same manager's entries, one of them since released
    const old = { name: 'team-a/gone', id: 'sb_gone', phase: 'Running' };
    await applyObject(
      kc,
      {
        apiVersion: current.apiVersion,
        kind: current.kind,
        metadata: { name: nodeName },
        node: nodeName,
        entries: [...(current.entries ?? []), old],
      },
      { fieldManager: FIELD_MANAGERS.inventoryPublisher, force: true, resource: NodeInventoryResource },
    );
    expect((await readInventory()).entries).toContainEqual(old);
    await client.claim({ template: 'img:pub', claimRef: 'team-a/job-rows' });
    await eventually(
      async () => {
        const inv = await readInventory();
        const rows = await client.sandboxes();
        expect(inv.entries?.map((e) => e.id).sort()).toEqual(rows.map((r) => r.id).sort());
        expect((await raw())['entries']).toBeUndefined();
      },
      { timeoutMs: 15_000 },
    );
    await client.close();
  });

  it('rebuilds a deleted NodeInventory on the next tick', async () => {
    const before = await eventually(() => readInventory(), { timeoutMs: 15_000 });
    await inventories.delete(undefined, nodeName);
    await eventually(
      async () => {
        const after = await readInventory();
        expect(after.metadata.uid).not.toBe(before.metadata.uid);
        expect(after.entries).toEqual(before.entries);
      },
      { timeoutMs: 15_000 },
    );
  });

  it('keeps the last object, marked Stale, while sandboxd is unreachable, and clears it when it answers', async () => {
    const before = await readInventory();
    sim.node(sim.nodes[0]?.name ?? '').setFaults({ partition: 'close' });
    await eventually(
      async () => {
        const inv = await readInventory();
        expect(inv.conditions).toEqual([expect.objectContaining({ type: 'Stale', status: 'True', reason: 'SandboxdUnreachable' })]);
        expect(inv.entries).toEqual(before.entries);
        expect(inv.pools).toEqual(before.pools);
      },
      { timeoutMs: 15_000 },
    );
    expect(await registry.getSingleMetricAsString('sandbox_scale_inventory_publisher_stale')).toMatch(/stale 1$/m);
    sim.node(sim.nodes[0]?.name ?? '').clearFaults();
    await eventually(async () => expect((await readInventory()).conditions).toBeUndefined(), { timeoutMs: 15_000 });
    expect(await registry.getSingleMetricAsString('sandbox_scale_inventory_publisher_stale')).toMatch(/stale 0$/m);
  });
});
