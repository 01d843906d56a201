import { statusErrorOf, type NodeInventory } from '@sandbox-scale/scale-core';
import { parseListQuery } from '../src/http/list-query';
import { OwnerRouting } from '../src/peers/owner-routing';
import { FORWARDED_PAGE_ITEMS, PeerCallSchema, type PeerCall } from '../src/peers/peer-protocol';
import { PeerSet, PeerUnreachableError, type PeerClient } from '@sandbox-scale/kube-runtime';
import { LocalVerbs } from '../src/peers/sandbox-verbs';
import { ContinueExpiredError, decodeContinue } from '../src/resource/list-query';
import type { ObjectList } from '../src/storage/rest';
import type { SandboxesREST } from '../src/storage/sandboxes-rest';
import { quietLog, replicaSandboxes } from './fleet-fixture';

// Replicas behind one Service get the pages of one list in any order (kube-apiserver's
// aggregator sends each request over whichever kept-alive connection is free). Their storages
// here are real, fed the same NodeInventory; their peer calls go in-process through the wire
// schema, as the peer endpoint parses them.

const A = '10.0.0.1:6443';
const B = '10.0.0.2:6443';
const C = '10.0.0.3:6443';
const NS = 'team-a';

const inventory = (rv: number, names: readonly string[]): NodeInventory => ({
  apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
  kind: 'NodeInventory',
  metadata: { name: 'node-1', resourceVersion: String(rv), creationTimestamp: '2026-01-01T00:00:00Z' },
  node: 'node-1',
  entries: names.map((name, i) => ({ name, id: `sb_${i}`, phase: i % 3 === 0 ? 'Pending' : 'Running' })),
});

const NAMES = Array.from({ length: 20 }, (_, i) => `${NS}/sb-${String(i).padStart(2, '0')}`);

interface Replica {
  readonly storage: SandboxesREST;
  readonly routing: OwnerRouting;
  readonly peers: PeerSet;
}

/** Replicas `ids` over one inventory; `down` are listed but refuse every call. */
function replicas(ids: readonly string[], down: ReadonlySet<string> = new Set()) {
  const calls: string[] = [];
  const all = new Map<string, Replica>();
  const locals = new Map<string, LocalVerbs>();
  for (const self of ids) {
    const storage = replicaSandboxes(undefined);
    storage.cache.upsertInventory(inventory(10, NAMES));
    storage.cache.live = true;
    const local = new LocalVerbs(storage);
    locals.set(self, local);
    const peers = new PeerSet(self);
    peers.update(ids);
    const client = {
      call: async (peer: string, call: PeerCall): Promise<Record<string, unknown>> => {
        calls.push(`${self}->${peer} ${call.op}${call.op === 'list' ? ` limit=${call.limit}` : ''}`);
        if (down.has(peer)) throw new PeerUnreachableError(`connect ECONNREFUSED ${peer}`);
        const wire = PeerCallSchema.parse(JSON.parse(JSON.stringify(call)));
        return JSON.parse(JSON.stringify(await (locals.get(peer) as LocalVerbs).run(wire))) as Record<string, unknown>;
      },
    } as unknown as PeerClient;
    const routing = new OwnerRouting({ local, peers, client, settleMs: 60_000, log: quietLog });
    storage.routeThrough(routing);
    all.set(self, { storage, routing, peers });
  }
  return { at: (id: string) => all.get(id) as Replica, calls };
}

const query = (params: Record<string, string>) => parseListQuery(NS, new URLSearchParams(params));
const keys = (page: ObjectList): string[] => page.items.map((s) => `${s.metadata.namespace}/${s.metadata.name}`);

/** Every page of one list, the i-th page asked of `via(i)`. */
async function pageAll(via: (i: number) => Replica, params: Record<string, string>, between: (i: number) => void = () => undefined) {
  const out: string[] = [];
  let cont = '';
  for (let i = 0; ; i++) {
    const page = await via(i).storage.list(query({ ...params, ...(cont ? { continue: cont } : {}) }));
    out.push(...keys(page));
    between(i);
    cont = page.metadata.continue ?? '';
    if (cont === '') return out;
    if (i > 1000) throw new Error('paging never ended');
  }
}

describe('a list paged across replicas', () => {
  it('serves every page from the snapshot its first page took, whichever replica is asked', async () => {
    const r = replicas([A, B]);
    const whole = keys(await r.at(A).storage.list(query({})));
    expect(whole).toEqual(NAMES);
    // alternating, as the aggregator's connections alternate
    const paged = await pageAll((i) => r.at(i % 2 === 0 ? A : B), { limit: '3' });
    expect(paged).toEqual(whole);
    // B served pages 2, 4, 6 by asking A (whose snapshot they are); A never asked B
    expect(r.calls.filter((c) => c.startsWith(`${B}->${A} list`))).toHaveLength(3);
    expect(r.calls.filter((c) => c.startsWith(`${A}->`))).toEqual([]);
  });

  it('keeps a list begun on one replica consistent while both replicas see the inventory change', async () => {
    const r = replicas([A, B]);
    const changed = [...NAMES.slice(0, 5), ...NAMES.slice(10), `${NS}/sb-99`];
    const paged = await pageAll(
      (i) => r.at(i === 0 ? A : B),
      { limit: '4' },
      (i) => {
        // after the first page every replica's cache moves on: deletions and a new sandbox
        if (i === 0) for (const id of [A, B]) r.at(id).storage.cache.upsertInventory(inventory(11, changed));
      },
    );
    expect(paged).toEqual(NAMES);
    // a list begun now sees the change, on either replica
    expect(await pageAll((i) => r.at(i % 2 === 0 ? B : A), { limit: '4' })).toEqual(changed);
  });

  it('carries the selectors and the namespace of the request to the replica that serves the page', async () => {
    const r = replicas([A, B]);
    const pending = keys(await r.at(A).storage.list(query({ labelSelector: 'sandbox.cocoonstack.io/phase=Pending' })));
    expect(pending.length).toBeGreaterThan(2);
    expect(pending.length).toBeLessThan(NAMES.length);
    const paged = await pageAll((i) => r.at(i % 2 === 0 ? A : B), { limit: '2', labelSelector: 'sandbox.cocoonstack.io/phase=Pending' });
    expect(paged).toEqual(pending);
    // another namespace with A's token: nothing of team-a is served in it
    const first = await r.at(A).storage.list(query({ limit: '2' }));
    const elsewhere = await r
      .at(B)
      .storage.list(parseListQuery('team-b', new URLSearchParams({ limit: '2', continue: first.metadata.continue ?? '' })));
    expect(keys(elsewhere)).toEqual([]);
  });

  it('asks the replica that served a list last first, and the others only when it does not hold the snapshot', async () => {
    const r = replicas([A, B, C]);
    // begun on C, continued on B: B's other peers are [A, C], so its first forwarded page asks A
    // (410: not its snapshot) before C, and every later one goes to C alone
    expect(await pageAll((i) => r.at(i === 0 ? C : B), { limit: '5' })).toEqual(NAMES);
    expect(r.calls.filter((c) => c.startsWith(`${B}->`))).toEqual([
      `${B}->${A} list limit=5`,
      `${B}->${C} list limit=5`,
      `${B}->${C} list limit=5`,
      `${B}->${C} list limit=5`,
    ]);
  });

  it('answers 410 Expired with a token to resume from here when no listed replica holds the snapshot', async () => {
    const r = replicas([A, B], new Set([A]));
    const first = await r.at(A).storage.list(query({ limit: '3' }));
    const err = await r
      .at(B)
      .storage.list(query({ limit: '3', continue: first.metadata.continue ?? '' }))
      .catch((e: unknown) => e);
    expect(statusErrorOf(err)?.code).toBe(410);
    expect(err).toBeInstanceOf(ContinueExpiredError);
    // the inconsistent token resumes after the same key from B's own state
    const resumed = decodeContinue((err as ContinueExpiredError).inconsistentContinue);
    expect(resumed.after).toBe(decodeContinue(first.metadata.continue ?? '').after);
    expect(keys(await r.at(B).storage.list(query({ limit: '3', continue: (err as ContinueExpiredError).inconsistentContinue })))).toEqual(
      NAMES.slice(3, 6),
    );
    expect(r.calls).toEqual([`${B}->${A} list limit=3`]);
  });

  it('asks a peer for at most FORWARDED_PAGE_ITEMS items, and serves its own pages without asking anyone', async () => {
    const r = replicas([A, B]);
    const first = await r.at(A).storage.list(query({ limit: '1' }));
    const rest = await r.at(B).storage.list(query({ limit: String(FORWARDED_PAGE_ITEMS * 10), continue: first.metadata.continue ?? '' }));
    expect(keys(rest)).toEqual(NAMES.slice(1));
    expect(r.calls).toEqual([`${B}->${A} list limit=${FORWARDED_PAGE_ITEMS}`]);
    await pageAll(() => r.at(B), { limit: '7' });
    expect(r.calls).toHaveLength(1);
  });
});
