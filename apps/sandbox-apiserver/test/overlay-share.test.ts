import { ANNOTATIONS, type ServedSandbox } from '@sandbox-scale/scale-core';
import { OverlayShare } from '../src/peers/overlay-share';
import { PeerCallSchema, type PeerCall } from '../src/peers/peer-protocol';
import { PeerSet } from '@sandbox-scale/kube-runtime';
import { LocalVerbs } from '../src/peers/sandbox-verbs';
import type { SandboxesREST } from '../src/storage/sandboxes-rest';
import { parseListQuery } from '../src/http/list-query';
import type { SandboxEvent } from '../src/resource/events';
import { publishedInventory, quietLog, replicaSandboxes, startStorageFleet, type StorageFleet } from './fleet-fixture';

// Two replicas' storages over one real sandboxd-sim node, their peer calls carried in-process
// (through the wire schema): what one replica creates or releases shows in the other's lists
// and watches before the node publishes again.

const TOKEN = 'unit-fleet-token';
const NS = 'team-a';
const TEMPLATE = 'registry.local/share:1';
const A = '10.0.0.1:6443';
const B = '10.0.0.2:6443';

let fleet: StorageFleet;

beforeAll(async () => {
  fleet = await startStorageFleet({ token: TOKEN, template: TEMPLATE, warm: 8 });
});

afterAll(async () => {
  await fleet?.stop();
});

interface Replica {
  readonly storage: SandboxesREST;
  readonly local: LocalVerbs;
  readonly events: SandboxEvent[];
}

/** Two replicas fed the same published inventory; `reachable` says which of them take peer calls. */
async function pair(reachable: (peer: string) => boolean = () => true): Promise<{ a: Replica; b: Replica; told: string[] }> {
  const inv = await publishedInventory(fleet.direct, fleet.node, fleet.sim.nodes[0]?.addr ?? '', new Set());
  const told: string[] = [];
  const replicas = new Map<string, Replica>();
  for (const self of [A, B]) {
    const storage = replicaSandboxes(fleet.clients);
    storage.cache.upsertInventory(inv);
    storage.cache.live = true;
    const events: SandboxEvent[] = [];
    storage.hub.subscribe((ev) => events.push(ev));
    replicas.set(self, { storage, local: new LocalVerbs(storage), events });
  }
  for (const self of [A, B]) {
    const peers = new PeerSet(self);
    peers.update([A, B]);
    const client = {
      call: async (peer: string, call: PeerCall): Promise<Record<string, unknown>> => {
        if (!reachable(peer)) throw new Error(`connect ECONNREFUSED ${peer}`);
        told.push(`${self}->${peer} ${call.op} ${'name' in call ? call.name : ''}`);
        return (replicas.get(peer) as Replica).local.run(PeerCallSchema.parse(JSON.parse(JSON.stringify(call))));
      },
    };
    (replicas.get(self) as Replica).local.share = new OverlayShare({
      storage: (replicas.get(self) as Replica).storage.reads,
      peers,
      client,
      log: quietLog,
    });
  }
  return { a: replicas.get(A) as Replica, b: replicas.get(B) as Replica, told };
}

const sandbox = (name: string): Record<string, unknown> => ({
  apiVersion: 'agents.x-k8s.io/v1beta1',
  kind: 'Sandbox',
  metadata: { name },
  spec: { podTemplate: { spec: { containers: [{ name: 'agent', image: TEMPLATE }] } } },
});
const listed = (r: Replica): string[] =>
  r.storage.reads.list(parseListQuery(NS, new URLSearchParams())).items.map((s) => s.metadata.name ?? '');
const eventsFor = (r: Replica, name: string): string[] =>
  r.events.filter((e) => (e.object as ServedSandbox).metadata.name === name).map((e) => e.type);

describe('list notices between replicas', () => {
  it('lists and watches on the other replica what one creates, forks or deletes, before the node publishes, and never hands it the token', async () => {
    const { a, b, told } = await pair();
    const made = await a.local.create(NS, sandbox('made-on-a'), { dryRun: false });
    expect(made.metadata.annotations?.[ANNOTATIONS.token]).toBeTruthy();
    expect(listed(b)).toEqual(['made-on-a']);
    expect(eventsFor(b, 'made-on-a')).toEqual(['ADDED']);
    const onB = await b.local.get(NS, 'made-on-a');
    expect(onB.metadata.annotations?.[ANNOTATIONS.claimId]).toBe(made.metadata.annotations?.[ANNOTATIONS.claimId]);
    expect(onB.metadata.annotations?.[ANNOTATIONS.token]).toBeUndefined();
    expect(onB.status.nodeName).toBe(fleet.node);

    const forked = (await a.local.act(NS, 'made-on-a', 'fork', { count: 2 }, false)) as { children: { name: string }[] };
    expect(listed(b).sort()).toEqual(['made-on-a', ...forked.children.map((c) => c.name)].sort());

    await a.local.delete(NS, 'made-on-a', { dryRun: false, body: undefined });
    expect(listed(b).sort()).toEqual(forked.children.map((c) => c.name).sort());
    expect(eventsFor(b, 'made-on-a')).toEqual(['ADDED', 'DELETED']);
    await expect(b.local.get(NS, 'made-on-a')).rejects.toThrow('not found');
    // a dry-run delete tells no one
    const before = told.length;
    await a.local.delete(NS, forked.children[0]?.name ?? '', { dryRun: true, body: undefined });
    await a.local.delete(NS, forked.children[0]?.name ?? '', { dryRun: false, body: { dryRun: ['All'] } });
    expect(told.length).toBe(before);
    expect(told.filter((t) => t.startsWith(`${A}->${B}`)).map((t) => t.split(' ')[1])).toEqual(['listed', 'listed', 'listed', 'released']);

    // the node's publish then agrees with both, and the notice left nothing behind to expire
    const inv = await publishedInventory(fleet.direct, fleet.node, fleet.sim.nodes[0]?.addr ?? '');
    for (const r of [a, b]) r.storage.cache.upsertInventory(inv);
    expect(listed(b).sort()).toEqual(listed(a).sort());
    expect(eventsFor(b, 'made-on-a')).toEqual(['ADDED', 'DELETED']);
    for (const r of [a, b]) r.storage.cache.stop();
  });

  it('still creates when the other replica cannot be told, which then lists it at the next publish', async () => {
    const { a, b } = await pair((peer) => peer !== B);
    await a.local.create(NS, sandbox('told-nobody'), { dryRun: false });
    expect(listed(a)).toContain('told-nobody');
    expect(listed(b)).not.toContain('told-nobody');
    b.storage.cache.upsertInventory(await publishedInventory(fleet.direct, fleet.node, fleet.sim.nodes[0]?.addr ?? ''));
    expect(listed(b)).toContain('told-nobody');
    for (const r of [a, b]) r.storage.cache.stop();
  });

  it('does not bring back a released sandbox on a late notice', async () => {
    const { a, b } = await pair();
    const made = await a.local.create(NS, sandbox('late-notice'), { dryRun: false });
    const row = a.storage.cache.get(NS, 'late-notice');
    await a.local.delete(NS, 'late-notice', { dryRun: false, body: undefined });
    expect(listed(b)).not.toContain('late-notice');
    await b.local.run({
      op: 'listed',
      namespace: NS,
      name: 'late-notice',
      node: fleet.node,
      entry: row?.entry ?? { name: `${NS}/late-notice`, id: made.metadata.annotations?.[ANNOTATIONS.claimId] ?? '', phase: 'Running' },
    });
    expect(listed(b)).not.toContain('late-notice');
    for (const r of [a, b]) r.storage.cache.stop();
  });
});
