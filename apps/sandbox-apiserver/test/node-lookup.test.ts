import { ClaimIndex, type NodeInventory } from '@sandbox-scale/scale-core';
import { SandboxdClientSet } from '@sandbox-scale/sandboxd-client';
import { startSim, type Sim } from '@sandbox-scale/sandboxd-sim';
import { findOnNodes } from '../src/peers/node-lookup';
import { NodeRouter } from '../src/storage/node-router';
import { Revisions } from '../src/storage/revisions';
import { SandboxStorage } from '../src/storage/sandbox-storage';
import { SandboxCache } from '../src/storage/sandbox-cache';
import { WatchHub } from '../src/storage/watch-hub';
import { quietLog } from './fleet-fixture';

// After the replicas change, the one that created a sandbox may be gone before the node
// publishes it: the new owner finds it on the nodes by the claim reference they recorded.

const TOKEN = 'unit-fleet-token';
const TEMPLATE = 'registry.local/lookup:1';
let sim: Sim;
let clients: SandboxdClientSet;

beforeAll(async () => {
  sim = await startSim({ nodes: 2, speed: 0, token: TOKEN, pools: [{ template: TEMPLATE, warm: 4 }] });
  for (const n of sim.nodes) sim.node(n.name).tick();
  clients = new SandboxdClientSet({ token: TOKEN });
});

afterAll(async () => {
  await clients?.close();
  await sim?.stop();
});

function storageOverNodes(): SandboxStorage {
  const revisions = new Revisions();
  const view = new SandboxCache({ graceMs: 50, hub: new WatchHub(10), revisions });
  // the nodes are known, but neither has published the sandboxes yet
  for (const n of sim.nodes) {
    const inv: NodeInventory = {
      apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
      kind: 'NodeInventory',
      metadata: { name: n.name, resourceVersion: '1' },
      node: n.name,
      address: n.addr,
      entries: [],
    };
    view.upsertInventory(inv);
  }
  return new SandboxStorage(view, new ClaimIndex({ maxBytes: 1 << 20 }), new NodeRouter(view, clients), revisions);
}

describe('findOnNodes', () => {
  it('finds the Sandbox delivery of a name on whichever node holds it, and serves it from then on', async () => {
    const [first, second] = sim.nodes;
    // same namespace/name, another kind of owner: never taken for the Sandbox
    await clients
      .forNode(first?.url ?? '')
      .claim({ template: TEMPLATE, claimRef: 'claim:5d1c0c1e-0000-4000-8000-000000000001:team-a/moved' });
    const c = await clients
      .forNode(second?.url ?? '')
      .claim({ template: TEMPLATE, claimRef: 'sandbox:5d1c0c1e-0000-4000-8000-000000000002:team-a/moved' });
    const storage = storageOverNodes();
    await expect(storage.get('team-a', 'moved')).rejects.toMatchObject({ code: 404 });
    expect(await findOnNodes(storage, 'team-a', 'moved', quietLog)).toBe(true);
    const loc = await storage.locate('team-a', 'moved');
    expect({ node: loc.node, claimId: loc.claimId }).toEqual({ node: second?.name, claimId: c.id });
  });

  it('finds nothing for a name no node delivered a Sandbox under', async () => {
    const storage = storageOverNodes();
    expect(await findOnNodes(storage, 'team-a', 'never-created', quietLog)).toBe(false);
    expect(await findOnNodes(storage, 'team-b', 'moved', quietLog)).toBe(false);
  });
});
