import { ClaimIndex, statusForError } from '@sandbox-scale/scale-core';
import { SandboxdClient, SandboxdClientSet } from '@sandbox-scale/sandboxd-client';
import { startSim, type Sim } from '@sandbox-scale/sandboxd-sim';
import { deleteSandbox } from '../src/storage/delete-sandbox';
import { LifecycleStorage, MAX_FORK_COUNT } from '../src/storage/lifecycle-storage';
import { NodeRouter } from '../src/storage/node-router';
import { Revisions } from '../src/storage/revisions';
import { SandboxStorage } from '../src/storage/sandbox-storage';
import { SandboxCache } from '../src/storage/sandbox-cache';
import { WatchHub } from '../src/storage/watch-hub';
import { publishedInventory } from './fleet-fixture';

const TOKEN = 'unit-fleet-token';
const NS = 'team-a';
const TEMPLATE = 'registry.local/guard:1';

let sim: Sim;
let clients: SandboxdClientSet;
let direct: SandboxdClient;
let node = '';

beforeAll(async () => {
  sim = await startSim({ nodes: 1, speed: 0, token: TOKEN, pools: [{ template: TEMPLATE, warm: 4 }] });
  node = sim.nodes[0]?.name ?? '';
  sim.node(node).tick();
  clients = new SandboxdClientSet({ token: TOKEN });
  direct = clients.forNode(sim.nodes[0]?.url ?? '');
});

afterAll(async () => {
  await clients?.close();
  await sim?.stop();
});

async function setup(name: string): Promise<{ lifecycle: LifecycleStorage; storage: SandboxStorage; id: string }> {
  const revisions = new Revisions();
  const cache = new SandboxCache({ graceMs: 50, hub: new WatchHub(10), revisions });
  const storage = new SandboxStorage(cache, new ClaimIndex({ maxBytes: 1 << 20 }), new NodeRouter(cache, clients), revisions);
  const c = await direct.claim({ template: TEMPLATE, claimRef: `${NS}/${name}` });
  cache.upsertInventory(await publishedInventory(direct, node, sim.nodes[0]?.addr ?? '', new Set([c.id])));
  return { lifecycle: new LifecycleStorage(storage), storage, id: c.id };
}

async function statusOf(p: Promise<unknown>): Promise<ReturnType<typeof statusForError>> {
  try {
    await p;
  } catch (err) {
    return statusForError(err);
  }
  throw new Error('expected the call to fail');
}

const live = async (id: string): Promise<boolean> => (await direct.sandboxes()).some((s) => s.id === id);

describe('delete preconditions', () => {
  it('refuses a delete whose resourceVersion or uid is not the object one with 409, releasing nothing', async () => {
    const { storage, id } = await setup('keep-me');
    const obj = await storage.get(NS, 'keep-me');
    const rv = obj.metadata.resourceVersion ?? '';
    const stale = await statusOf(
      deleteSandbox(storage, NS, 'keep-me', {
        dryRun: false,
        body: { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { resourceVersion: `${rv}9` } },
      }),
    );
    expect(stale).toMatchObject({ code: 409, reason: 'Conflict' });
    expect(stale.message).toContain(`ResourceVersion in precondition: ${rv}9`);
    expect(
      await statusOf(deleteSandbox(storage, NS, 'keep-me', { dryRun: false, body: { preconditions: { uid: 'not-the-uid' } } })),
    ).toMatchObject({ code: 409 });
    expect(await live(id)).toBe(true);
    await deleteSandbox(storage, NS, 'keep-me', { dryRun: false, body: { preconditions: { resourceVersion: rv, uid: obj.metadata.uid } } });
    expect(await live(id)).toBe(false);
  });

  it('answers a body that is not DeleteOptions with 400, not 500', async () => {
    const { storage } = await setup('odd-body');
    expect(await statusOf(deleteSandbox(storage, NS, 'odd-body', { dryRun: false, body: { preconditions: { uid: 7 } } }))).toMatchObject({
      code: 400,
      reason: 'BadRequest',
    });
    expect(await statusOf(deleteSandbox(storage, NS, 'odd-body', { dryRun: false, body: [1, 2] }))).toMatchObject({ code: 400 });
  });
});

describe('fork count', () => {
  it('refuses more children than the node fork limit with 422 naming count, before any node call', async () => {
    const { lifecycle } = await setup('parent');
    const before = (await direct.sandboxes()).length;
    const s = await statusOf(lifecycle.act(NS, 'parent', 'fork', { kind: 'SandboxForkOptions', count: 1_000_000 }, false));
    expect(s).toMatchObject({ code: 422, reason: 'Invalid' });
    expect(s.details?.causes).toEqual([expect.objectContaining({ field: 'count' })]);
    expect(s.message).toContain(`at most ${MAX_FORK_COUNT}`);
    expect((await direct.sandboxes()).length).toBe(before);
  });
});
