import { randomBytes } from 'node:crypto';
import { createLogger } from '@sandbox-scale/kube-runtime';
import {
  ClaimIndex,
  formatOwnerRef,
  formatRfc3339Seconds,
  OwnerRefKey,
  RENEWAL_WINDOW,
  type NodeInventory,
} from '@sandbox-scale/scale-core';
import { SandboxdClient, SandboxdClientSet } from '@sandbox-scale/sandboxd-client';
import { ManualClock, startSim, type Sim } from '@sandbox-scale/sandboxd-sim';
import { PeerSet } from '@sandbox-scale/kube-runtime';
import { renewalScope } from '../src/peers/renewal-scope';
import { LeasePolicy } from '../src/storage/lease-policy';
import { LeaseRenewer, type LeaseRenewerOptions } from '../src/storage/lease-renewer';
import { NodeRouter } from '../src/storage/node-router';
import { Revisions } from '../src/storage/revisions';
import { SandboxStorage } from '../src/storage/sandbox-storage';
import { SandboxCache } from '../src/storage/sandbox-cache';
import { WatchHub } from '../src/storage/watch-hub';

// The renewer against a real sandboxd-sim on virtual time: sandboxes that live until deleted
// outlive many leases, sandboxes with a TTL of their own end at it, and renewals are bounded.

const TOKEN = 'unit-fleet-token';
const NS = 'team-a';
const TEMPLATE = 'registry.local/lease:1';
const LEASE_S = 60;
const KEY = new OwnerRefKey(randomBytes(32));

let sim: Sim;
let clock: ManualClock;
let clients: SandboxdClientSet;
let direct: SandboxdClient;
let node = '';

beforeAll(async () => {
  clock = new ManualClock();
  sim = await startSim({ nodes: 1, speed: 0, token: TOKEN, clock, pools: [{ template: TEMPLATE, warm: 8 }] });
  node = sim.nodes[0]?.name ?? '';
  sim.node(node).tick();
  await clock.advance(0);
  clients = new SandboxdClientSet({ token: TOKEN });
  direct = clients.forNode(sim.nodes[0]?.url ?? '');
});

afterAll(async () => {
  await clients?.close();
  await sim?.stop();
});

/** One server's cache, storage and renewer over the sim's node, renewing on virtual time (on every name, or those `renewsHere` picks). */
function replica(renewsHere?: LeaseRenewerOptions['renewsHere']): { view: SandboxCache; renewer: LeaseRenewer } {
  const revisions = new Revisions();
  const view = new SandboxCache({ graceMs: 50, hub: new WatchHub(10), revisions });
  const storage = new SandboxStorage(view, new ClaimIndex({ maxBytes: 1 << 20 }), new NodeRouter(view, clients), revisions);
  const renewer = new LeaseRenewer({
    cache: view,
    router: storage.router,
    leaseTtlSeconds: LEASE_S,
    ratePerSecond: 100,
    log: createLogger({ name: 'renewer-test', level: 'silent' }),
    refKey: KEY,
    now: () => clock.now(),
    ...(renewsHere === undefined ? {} : { renewsHere }),
  });
  return { view, renewer };
}

/** The publisher's view of the node: `rows` with their current deadlines, at resourceVersion `rv`. */
function inventoryOf(rows: Awaited<ReturnType<SandboxdClient['sandboxes']>>, rv: number): NodeInventory {
  return {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'NodeInventory',
    metadata: { name: node, resourceVersion: String(rv) },
    node,
    address: sim.nodes[0]?.addr ?? '',
    entries: rows.map((r) => ({
      name: `${NS}/${r.claimRef?.split('/')[1] ?? r.id}`,
      id: r.id,
      phase: 'Running',
      ...(r.claimRef ? { claimRef: r.claimRef } : {}),
      ...(r.deadline ? { deadline: formatRfc3339Seconds(r.deadline) } : {}),
    })),
  };
}

it('keeps a sandbox that lives until deleted over ten leases, lets one with its own TTL end, and renews each lease once', async () => {
  const policy = new LeasePolicy(LEASE_S);
  const forever = policy.forRequested(0);
  const bounded = policy.forRequested(90);
  expect(forever).toEqual({ ttlSeconds: LEASE_S, renewed: true });
  expect(bounded).toEqual({ ttlSeconds: 90, renewed: false });
  const refOf = (name: string, renewed: boolean): string =>
    formatOwnerRef({ kind: 'Sandbox', uid: `uid-${name}`, namespace: NS, name, ...(renewed ? { renewed } : {}) }, KEY);
  const a = await direct.claim({ template: TEMPLATE, ttlSeconds: forever.ttlSeconds, claimRef: refOf('forever', true) });
  const b = await direct.claim({ template: TEMPLATE, ttlSeconds: bounded.ttlSeconds, claimRef: refOf('bounded', false) });
  // `+renew` written by a node or a sandboxd tenant: without a MAC, and with one of another key
  const forged = await direct.claim({
    template: TEMPLATE,
    ttlSeconds: forever.ttlSeconds,
    claimRef: `sandbox+renew:uid-forged:${NS}/forged`,
  });
  const otherKey = new OwnerRefKey(randomBytes(32));
  const foreign = await direct.claim({
    template: TEMPLATE,
    ttlSeconds: forever.ttlSeconds,
    claimRef: formatOwnerRef({ kind: 'Sandbox', uid: 'uid-foreign', namespace: NS, name: 'foreign', renewed: true }, otherKey),
  });

  const { view, renewer } = replica();
  let rv = 1;
  // the publisher's view of the node: every live row with its current deadline
  const publish = async (): Promise<void> => {
    view.upsertInventory(inventoryOf(await direct.sandboxes(), rv++));
  };
  expect(renewer.intervalMs).toBe(7500);

  let renewals = 0;
  let unproven = 0;
  const alive = async (id: string): Promise<boolean> => (await direct.sandboxes()).some((r) => r.id === id);
  const t0 = clock.now();
  // ten leases of virtual time, one renewer pass per interval, a publish every other pass
  for (let i = 0; clock.now() - t0 < 10 * LEASE_S * 1000; i++) {
    if (i % 2 === 0) await publish();
    const pass = await renewer.pass();
    renewals += pass.renewed;
    unproven = Math.max(unproven, pass.unproven);
    await clock.advance(renewer.intervalMs);
  }
  const foreverAlive = await alive(a.id);
  const boundedAlive = await alive(b.id);
  // served while they last, never renewed: they end at their first lease
  expect(unproven).toBe(2);
  expect(await alive(forged.id)).toBe(false);
  expect(await alive(foreign.id)).toBe(false);
  console.log(
    JSON.stringify({
      test: 'aggregated-api-lease',
      lease_s: LEASE_S,
      virtual_s: (clock.now() - t0) / 1000,
      renewals,
      forever_alive: foreverAlive,
      bounded_alive: boundedAlive,
    }),
  );
  expect((clock.now() - t0) / 1000).toBeGreaterThanOrEqual(10 * LEASE_S);
  expect(foreverAlive).toBe(true);
  expect(boundedAlive).toBe(false);
  // one renewal per lease at its renewal point, seen by the next pass: a renewal every
  // [from × lease, to × lease + one pass interval]
  const virtualMs = clock.now() - t0;
  expect(renewals).toBeGreaterThanOrEqual(Math.floor(virtualMs / (RENEWAL_WINDOW.to * LEASE_S * 1000 + renewer.intervalMs)));
  expect(renewals).toBeLessThanOrEqual(Math.ceil(virtualMs / (RENEWAL_WINDOW.from * LEASE_S * 1000)) + 1);
  view.stop();
});

it('with two replicas renews each lease once in all, by the replica that owns the name, and keeps every sandbox alive', async () => {
  const A = '10.0.0.1:6443';
  const B = '10.0.0.2:6443';
  const names = ['pair-0', 'pair-1', 'pair-2', 'pair-3', 'pair-4'];
  const ids = new Map<string, string>();
  for (const name of names)
    ids.set(
      name,
      (
        await direct.claim({
          template: TEMPLATE,
          ttlSeconds: LEASE_S,
          claimRef: formatOwnerRef({ kind: 'Sandbox', uid: `uid-${name}`, namespace: NS, name, renewed: true }, KEY),
        })
      ).id,
    );
  const replicas = [A, B].map((self) => {
    const peers = new PeerSet(self, () => clock.now());
    peers.update([A, B]);
    const { view, renewer } = replica(renewalScope({ peers, peered: true, peersKnown: () => true, settleMs: 60_000 }));
    return { self, view, peers, renewer, renewed: 0, elsewhere: 0 };
  });
  let rv = 1;
  const publish = async (): Promise<void> => {
    const rows = (await direct.sandboxes()).filter((r) => [...ids.values()].includes(r.id));
    const inv = inventoryOf(rows, rv++);
    for (const r of replicas) r.view.upsertInventory(inv);
  };
  const interval = replicas[0]?.renewer.intervalMs ?? 0;
  const t0 = clock.now();
  for (let i = 0; clock.now() - t0 < 10 * LEASE_S * 1000; i++) {
    if (i % 2 === 0) await publish();
    for (const r of replicas) {
      const p = await r.renewer.pass();
      r.renewed += p.renewed;
      r.elsewhere += p.elsewhere;
    }
    await clock.advance(interval);
  }
  const live = new Set((await direct.sandboxes()).map((r) => r.id));
  const alive = names.filter((n) => live.has(ids.get(n) ?? '')).length;
  const [a, b] = replicas;
  const ownedByA = names.filter((n) => a?.peers.owns(NS, n)).length;
  const virtualMs = clock.now() - t0;
  console.log(
    JSON.stringify({
      test: 'aggregated-api-lease-two-replicas',
      sandboxes: names.length,
      alive,
      owned_by_a: ownedByA,
      renewed_by_a: a?.renewed,
      renewed_by_b: b?.renewed,
    }),
  );
  expect(alive).toBe(names.length);
  // each replica renewed only what it owns, and together once per lease per sandbox (not twice)
  expect(ownedByA).toBeGreaterThan(0);
  expect(ownedByA).toBeLessThan(names.length);
  const perLeaseMax = Math.ceil(virtualMs / (RENEWAL_WINDOW.from * LEASE_S * 1000)) + 1;
  const perLeaseMin = Math.floor(virtualMs / (RENEWAL_WINDOW.to * LEASE_S * 1000 + interval));
  expect(a?.renewed).toBeGreaterThanOrEqual(ownedByA * perLeaseMin);
  expect(a?.renewed).toBeLessThanOrEqual(ownedByA * perLeaseMax);
  expect(b?.renewed).toBeGreaterThanOrEqual((names.length - ownedByA) * perLeaseMin);
  expect(b?.renewed).toBeLessThanOrEqual((names.length - ownedByA) * perLeaseMax);
  expect((a?.elsewhere ?? 0) + (b?.elsewhere ?? 0)).toBeGreaterThan(0);
  for (const r of replicas) r.view.stop();
});
