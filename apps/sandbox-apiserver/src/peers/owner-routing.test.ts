import { createLogger } from '@sandbox-scale/kube-runtime';
import { NotFoundError, statusErrorOf } from '@sandbox-scale/scale-core';
import { SANDBOX_RESOURCE } from '../storage/sandbox-storage';
import { OwnerRouting } from './owner-routing';
import type { PeerCall } from './peer-protocol';
import { PeerSet, PeerUnreachableError, type PeerClient } from '@sandbox-scale/kube-runtime';
import type { LocalVerbs } from './sandbox-verbs';

const A = '10.0.0.1:6443';
const B = '10.0.0.2:6443';
const log = createLogger({ name: 'test', level: 'silent' });
const body = (name: string): Record<string, unknown> => ({
  apiVersion: 'agents.x-k8s.io/v1beta1',
  kind: 'Sandbox',
  metadata: { name },
  spec: { podTemplate: { spec: { containers: [{ name: 'a', image: 'img:1' }] } } },
});

/** Records what ran locally and what went to which peer; the storage itself is not the subject here. */
function setup(peerAnswer: (peer: string, call: PeerCall) => Record<string, unknown>) {
  const ran: string[] = [];
  const sent: Array<{ peer: string; op: string }> = [];
  const hidden: string[] = [];
  const local = {
    storage: {
      reads: { index: { deleteByName: (ns: string, n: string) => hidden.push(`${ns}/${n}`) }, router: { configured: false } },
      cache: { markReleased: () => undefined, inventories: () => [] },
    },
    create: async (ns: string) => (ran.push(`create ${ns}`), { kind: 'Sandbox' }),
    get: async (_ns: string, name: string) => {
      ran.push(`get ${name}`);
      throw new NotFoundError(SANDBOX_RESOURCE, name);
    },
    delete: async (_ns: string, name: string) => {
      ran.push(`delete ${name}`);
      throw new NotFoundError(SANDBOX_RESOURCE, name);
    },
    act: async (_ns: string, name: string, action: string) => (ran.push(`${action} ${name}`), {}),
    run: async () => ({}),
  } as unknown as LocalVerbs;
  const client = {
    call: async (peer: string, call: PeerCall) => {
      sent.push({ peer, op: call.op });
      return peerAnswer(peer, call);
    },
  } as unknown as PeerClient;
  const peers = new PeerSet(A);
  peers.update([A, B]);
  const routing = new OwnerRouting({ local, peers, client, settleMs: 60_000, log });
  return { routing, peers, ran, sent, hidden };
}

/** A name each replica owns, found by the same hashing the routing uses. */
function namesOwnedBy(peers: PeerSet, owner: string): string {
  for (let i = 0; ; i++) if (peers.ownerOf('ns', `sb-${i}`) === owner) return `sb-${i}`;
}

describe('OwnerRouting', () => {
  it('creates a name it owns here, and hands a name another replica owns to that replica', async () => {
    const t = setup(() => ({ kind: 'Sandbox', metadata: { name: 'x' } }));
    await t.routing.create('ns', body(namesOwnedBy(t.peers, A)), { dryRun: false });
    await t.routing.create('ns', body(namesOwnedBy(t.peers, B)), { dryRun: false });
    expect(t.ran).toEqual(['create ns']);
    expect(t.sent).toEqual([{ peer: B, op: 'create' }]);
  });

  it('asks the owner before answering 404, and answers what the owner has', async () => {
    const t = setup(() => ({ kind: 'Sandbox', metadata: { name: 'y', annotations: { 'sandbox.cocoonstack.io/claim-id': 'sb_1' } } }));
    const name = namesOwnedBy(t.peers, B);
    await expect(t.routing.get('ns', name)).resolves.toMatchObject({ kind: 'Sandbox' });
    expect(t.sent).toEqual([{ peer: B, op: 'get' }]);
  });

  it('answers 404 for a name it owns without asking anyone while the peers are settled', async () => {
    const t = setup(() => ({}));
    const err = await t.routing.get('ns', namesOwnedBy(t.peers, A)).catch((e: unknown) => e);
    expect(statusErrorOf(err)?.code).toBe(404);
    expect(t.sent).toEqual([]);
  });

  it('answers 503, not 404, when the owner of a name it does not know cannot be reached', async () => {
    const t = setup(() => {
      throw new PeerUnreachableError('connect ECONNREFUSED');
    });
    const name = namesOwnedBy(t.peers, B);
    expect(statusErrorOf(await t.routing.get('ns', name).catch((e: unknown) => e))?.code).toBe(503);
    expect(statusErrorOf(await t.routing.delete('ns', name, { dryRun: false, body: undefined }).catch((e: unknown) => e))?.code).toBe(503);
    expect(statusErrorOf(await t.routing.create('ns', body(name), { dryRun: false }).catch((e: unknown) => e))?.code).toBe(503);
  });

  it('runs a delete of a name owned elsewhere on the owner, and hides it here too', async () => {
    const t = setup(() => ({ kind: 'Sandbox', metadata: { name: 'z', annotations: { 'sandbox.cocoonstack.io/claim-id': 'sb_2' } } }));
    const name = namesOwnedBy(t.peers, B);
    await t.routing.delete('ns', name, { dryRun: false, body: undefined });
    expect(t.sent).toEqual([{ peer: B, op: 'delete' }]);
    expect(t.ran).toEqual([]);
    expect(t.hidden).toEqual([`ns/${name}`]);
  });

  it('asks every other replica on a miss right after the peers changed', async () => {
    const t = setup((_peer, call) => {
      if (call.op === 'get') throw new NotFoundError(SANDBOX_RESOURCE, 'gone');
      return {};
    });
    t.peers.update([A, B, '10.0.0.3:6443']);
    const name = namesOwnedBy(t.peers, A);
    const err = await t.routing.get('ns', name).catch((e: unknown) => e);
    expect(statusErrorOf(err)?.code).toBe(404);
    expect(t.sent.map((s) => s.peer).sort()).toEqual([B, '10.0.0.3:6443']);
  });

  it('runs a snapshot claim on the owner of the name it creates, whoever owns the source, and never asks a second replica', async () => {
    const t = setup((_peer, call) => {
      if (call.op === 'act') throw new NotFoundError(SANDBOX_RESOURCE, 'ck_1');
      return {};
    });
    const source = namesOwnedBy(t.peers, B);
    const here = namesOwnedBy(t.peers, A);
    await t.routing.act('ns', source, 'claimsnapshot', { snapshot: 'ck_1', name: here }, false);
    expect(t.ran).toEqual([`claimsnapshot ${source}`]);
    expect(t.sent).toEqual([]);
    // a target owned elsewhere goes there, and its 404 (no such snapshot) is the answer
    const err = await t.routing.act('ns', here, 'claimsnapshot', { snapshot: 'ck_1', name: source }, false).catch((e: unknown) => e);
    expect(statusErrorOf(err)?.code).toBe(404);
    expect(t.sent).toEqual([{ peer: B, op: 'act' }]);
    expect(t.ran).toEqual([`claimsnapshot ${source}`]);
  });
});
