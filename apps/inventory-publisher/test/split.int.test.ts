import { randomUUID } from 'node:crypto';
import { Registry } from 'prom-client';
import { applyCrds, eventually, installChartAppRbac, runSuffix, testKubeConfig, type ChartAppIdentity } from '@sandbox-scale/e2e';
import { apiStatusOf, applyObject, ResourceClient } from '@sandbox-scale/kube-runtime';
import { captureLog } from '@sandbox-scale/kube-runtime/testing';
import {
  FIELD_MANAGERS,
  INVENTORY_OBJECT_MAX_BYTES,
  inventoryObjectName,
  NodeInventorySchema,
  parseObject,
  type NodeInventory,
} from '@sandbox-scale/scale-core';
import { SandboxdClient, type NodeInfo, type SandboxRow } from '@sandbox-scale/sandboxd-client';
import { startSim, type Sim } from '@sandbox-scale/sandboxd-sim';
import {
  bodyBytes,
  buildInventory,
  NodeInventoryResource,
  splitInventory,
  startPublisher,
  storedBody,
  type RunningPublisher,
} from '../src/index';

const kc = testKubeConfig();
const inventories = new ResourceClient(kc, NodeInventoryResource);
const TOKEN = 'fleet-secret';
const suffix = runSuffix();
let identity: ChartAppIdentity;
const cleanup: string[] = [];

const info: NodeInfo = { pools: [], claimed: 0, hibernated: 0, archived: 0, draining: false, atCapacity: false, peers: [] };

/** A busy node's rows with realistic names: an owner reference with a uid, a 20-character namespace, a 30-character name. */
function rows(n: number): SandboxRow[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `sb_${i.toString(16).padStart(16, '0')}`,
    key: { template: 'registry.local/agents/python:3.12', net: 'none', size: 'small' },
    claimRef: `SandboxClaim:${randomUUID()}:team-payments-prod-1/agent-run-${i.toString(16).padStart(8, '0')}-attempt-01`,
    deadline: new Date('2030-01-02T03:04:05Z'),
    claimedAt: new Date('2030-01-01T03:04:05Z'),
    hibernated: false,
    archived: false,
  }));
}

async function readObject(name: string): Promise<NodeInventory | undefined> {
  try {
    return parseObject(NodeInventorySchema, await inventories.get(undefined, name));
  } catch (err) {
    if (apiStatusOf(err)?.code === 404) return undefined;
    throw err;
  }
}

beforeAll(async () => {
  await applyCrds(kc, 'charts/sandbox-scale/crds');
  // the deployed shape: the publisher's own ServiceAccount and RBAC from the chart
  identity = await installChartAppRbac(kc, 'inventory-publisher', { release: `split-${suffix}`, namespace: 'default' });
});

afterAll(async () => {
  for (const name of cleanup) await inventories.delete(undefined, name).catch(() => undefined);
  await identity?.remove();
});

describe("a NodeInventory over etcd's request limit", () => {
  it('is refused whole by the real API server and accepted split into parts', async () => {
    const node = `big-${suffix}`;
    const empty = bodyBytes(buildInventory({ node, address: '10.0.0.1:7777', rows: [], info, now: new Date() }));
    const sample = bodyBytes(buildInventory({ node, address: '10.0.0.1:7777', rows: rows(1000), info, now: new Date() }));
    const perEntry = (sample - empty) / 1000;
    const perObject = Math.floor((INVENTORY_OBJECT_MAX_BYTES - empty) / perEntry);
    // 1.5 MiB is etcd's --max-request-bytes; a body of 2 MB is under kube-apiserver's own 3 MB cap
    const count = Math.ceil(2_000_000 / perEntry);
    const wholeBytes = bodyBytes(buildInventory({ node, address: '10.0.0.1:7777', rows: rows(count), info, now: new Date() }));
    console.log(
      `NodeInventory entry ${perEntry.toFixed(0)} bytes; one object holds ${perObject} entries (1 MiB body); ${count} entries = ${(wholeBytes / 1e6).toFixed(2)} MB`,
    );
    expect(perEntry).toBeGreaterThan(80);
    expect(perEntry).toBeLessThan(400);
    // the figures printed: a 1 MiB object holds thousands of entries, and the test body needs parts
    expect(perObject).toBeGreaterThan(2_500);
    expect(wholeBytes).toBeGreaterThan(1.5 * 1024 * 1024);
    expect(count).toBeGreaterThan(perObject);

    const whole = buildInventory({ node, address: '10.0.0.1:7777', rows: rows(count), info, now: new Date() });
    cleanup.push(node);
    let refused: unknown;
    try {
      await applyObject(identity.kubeConfig, storedBody(whole), {
        fieldManager: FIELD_MANAGERS.inventoryPublisher,
        force: true,
        resource: NodeInventoryResource,
      });
    } catch (err) {
      refused = err;
    }
    expect(apiStatusOf(refused)?.code).toBeGreaterThanOrEqual(400);
    expect(apiStatusOf(refused)?.message ?? String(refused)).toMatch(/too large/i);

    const objects = splitInventory(whole);
    expect(objects.length).toBeGreaterThanOrEqual(2);
    for (const obj of objects) {
      cleanup.push(obj.metadata.name);
      await applyObject(identity.kubeConfig, storedBody(obj), {
        fieldManager: FIELD_MANAGERS.inventoryPublisher,
        force: true,
        resource: NodeInventoryResource,
      });
    }
    const stored = await Promise.all(objects.map((_, part) => readObject(inventoryObjectName(node, part))));
    expect(stored[0]?.parts).toBe(objects.length);
    expect(stored.slice(1).map((o) => o?.part)).toEqual(objects.slice(1).map((_, i) => i + 1));
    const names = stored.flatMap((o) => o?.entries?.map((e) => e.name) ?? []);
    expect(new Set(names).size).toBe(count);
  });
});

describe('inventory-publisher splitting a node against sandboxd-sim', () => {
  let sim: Sim | undefined;
  let running: RunningPublisher | undefined;

  afterAll(async () => {
    await running?.stop();
    await sim?.stop();
  });

  it('writes a node too large for one object as parts, and deletes the parts once it fits again', async () => {
    sim = await startSim({ nodes: 1, speed: 0, token: TOKEN, pools: [{ template: 'img:split', warm: 24 }] });
    const simNode = sim.nodes[0];
    if (!simNode) throw new Error('no sim node');
    const client = new SandboxdClient({ baseUrl: simNode.url, token: TOKEN });
    await eventually(async () => expect((await client.info()).pools[0]?.warm).toBe(24));
    const claimed: Array<{ id: string }> = [];
    for (let i = 0; i < 24; i++) claimed.push(await client.claim({ template: 'img:split', claimRef: `team-split/sb-${i}` }));
    const node = `split-${suffix}`;
    cleanup.push(node, ...[1, 2, 3, 4, 5, 6, 7].map((p) => inventoryObjectName(node, p)));
    const { log } = captureLog();
    // about eight entries per object: the 24 claimed sandboxes need four
    const maxObjectBytes = 2_000;
    running = startPublisher({
      nodeName: node,
      sandboxdUrl: simNode.url,
      advertiseAddress: simNode.addr,
      publishIntervalMs: 300,
      fleetToken: TOKEN,
      kubeConfig: identity.kubeConfig,
      log,
      registry: new Registry(),
      maxObjectBytes,
    });
    await eventually(
      async () => {
        const own = await readObject(node);
        expect(own?.parts).toBeGreaterThanOrEqual(2);
        const parts = await Promise.all(
          Array.from({ length: (own?.parts ?? 1) - 1 }, (_, i) => readObject(inventoryObjectName(node, i + 1))),
        );
        for (const p of parts) expect(p?.address).toBeUndefined();
        const names = [own, ...parts].flatMap((o) => o?.entries?.map((e) => e.name) ?? []).sort();
        expect(names).toEqual(claimed.map((_, i) => `team-split/sb-${i}`).sort());
      },
      { timeoutMs: 30_000 },
    );
    const parts = (await readObject(node))?.parts ?? 0;

    for (const c of claimed.slice(2)) await client.release(c.id);
    await eventually(
      async () => {
        const own = await readObject(node);
        expect(own?.parts).toBeUndefined();
        expect(own?.entries?.map((e) => e.name).sort()).toEqual(['team-split/sb-0', 'team-split/sb-1']);
        for (let p = 1; p < parts; p++) expect(await readObject(inventoryObjectName(node, p))).toBeUndefined();
      },
      { timeoutMs: 30_000 },
    );
    await client.close();
  });
});
