import { randomBytes } from 'node:crypto';
import { ApiException } from '@kubernetes/client-node';
import { createLogger } from '@sandbox-scale/kube-runtime';
import {
  ANNOTATIONS,
  formatOwnerRef,
  OwnerRefKey,
  type InventoryLike,
  type SandboxClaim,
  type SandboxOwner,
} from '@sandbox-scale/scale-core';
import type { NodeDelivery } from '../gateway/claim-gateway';
import { ClaimOwnerMismatchError } from '../record/record-errors';
import { claimOwnerOf, OrphanReconciler, orphanDecision, type OrphanOutcome } from './orphan-reconciler';

const UID = '7c9e6679-7425-40de-944b-e07fc1f90ae7';
const OTHER = '00000000-0000-0000-0000-000000000000';
const claimOwner: SandboxOwner = { kind: 'SandboxClaim', uid: UID, namespace: 'ns', name: 'c1' };
const fastOwner: SandboxOwner = { kind: 'FastPathClaim', uid: UID, namespace: 'ns', name: 'f1' };
const KEY = new OwnerRefKey(randomBytes(32));

function claim(name: string, o: { uid?: string; deliveryUid?: string; sandbox?: string; bound?: 'True' | 'False' } = {}): SandboxClaim {
  return {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxClaim',
    metadata: {
      name,
      namespace: 'ns',
      uid: o.uid ?? UID,
      resourceVersion: '7',
      ...(o.deliveryUid ? { annotations: { [ANNOTATIONS.deliveryUid]: o.deliveryUid } } : {}),
    },
    spec: { warmPoolRef: { name: 'base' } },
    ...(o.sandbox || o.bound
      ? {
          status: {
            ...(o.sandbox ? { sandbox: { name: 'c', claimID: o.sandbox } } : {}),
            ...(o.bound
              ? {
                  conditions: [
                    { type: 'Bound', status: o.bound, reason: 'NodeLocalClaim', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' },
                  ],
                }
              : {}),
          },
        }
      : {}),
  } as SandboxClaim;
}

describe('orphanDecision', () => {
  it('adopts only onto the exact owner that records no sandbox', () => {
    expect(orphanDecision(claimOwner, 'sb_1', claim('c1'))).toBe('adopt');
    // a claim that failed before delivery (Bound=False, no sandbox) is still adopted
    expect(orphanDecision(claimOwner, 'sb_1', claim('c1', { bound: 'False' }))).toBe('adopt');
    expect(orphanDecision(fastOwner, 'sb_1', claim('f1', { uid: OTHER, deliveryUid: UID }))).toBe('adopt');
  });

  it('leaves a claim that records this sandbox alone; a second delivery of a SandboxClaim that holds another is a duplicate', () => {
    expect(orphanDecision(claimOwner, 'sb_1', claim('c1', { sandbox: 'sb_1', bound: 'True' }))).toBe('bound');
    expect(orphanDecision(claimOwner, 'sb_1', claim('c1', { sandbox: 'sb_2' }))).toBe('duplicate');
    expect(orphanDecision(claimOwner, 'sb_1', claim('c1', { sandbox: 'sb_2', bound: 'True' }))).toBe('duplicate');
    // a fast-path claim is written for one delivery uid: another sandbox under it is left alone
    expect(orphanDecision(fastOwner, 'sb_1', claim('f1', { uid: OTHER, deliveryUid: UID, sandbox: 'sb_2', bound: 'True' }))).toBe('bound');
    // the sandbox is recorded without a Bound condition yet: the record is finished, not skipped
    expect(orphanDecision(claimOwner, 'sb_1', claim('c1', { sandbox: 'sb_1' }))).toBe('adopt');
  });

  it('never writes onto another object of the name', () => {
    expect(orphanDecision(claimOwner, 'sb_1', claim('c1', { uid: OTHER }))).toBe('foreign');
    expect(orphanDecision(fastOwner, 'sb_1', claim('f1', { deliveryUid: OTHER }))).toBe('foreign');
    expect(orphanDecision(fastOwner, 'sb_1', claim('f1'))).toBe('foreign');
  });

  it('leaves the VM of a deleted SandboxClaim intact and creates the missing claim of a fast-path delivery', () => {
    expect(orphanDecision(claimOwner, 'sb_1', undefined)).toBe('missing');
    expect(orphanDecision(fastOwner, 'sb_1', undefined)).toBe('create');
  });

  it('has a claim to record onto only for SandboxClaim and fast-path references', () => {
    expect(claimOwnerOf(formatOwnerRef(claimOwner, KEY), KEY)).toEqual({ ...claimOwner, proven: true });
    expect(claimOwnerOf(formatOwnerRef(fastOwner, KEY), KEY)).toEqual({ ...fastOwner, proven: true });
    for (const kind of ['Sandbox', 'ForkChild', 'SnapshotClaim'] as const)
      expect(claimOwnerOf(formatOwnerRef({ ...claimOwner, kind }, KEY), KEY)).toBeUndefined();
    expect(claimOwnerOf('ns/c1', KEY)).toBeUndefined();
    expect(claimOwnerOf('not a reference', KEY)).toBeUndefined();
  });

  it('a SandboxClaim or fast-path reference this control plane did not write is unproven', () => {
    expect(claimOwnerOf(`fastclaim:${UID}:victim/f1`, KEY)).toBe('unproven');
    expect(claimOwnerOf(formatOwnerRef(fastOwner, new OwnerRefKey(randomBytes(32))), KEY)).toBe('unproven');
    expect(claimOwnerOf(formatOwnerRef(claimOwner, KEY).replace(':ns/', ':victim/'), KEY)).toBe('unproven');
  });
});

/** Counts every request the pass makes; the cluster and the nodes are fakes of pure state. */
function harness(o: {
  deliveries: Record<string, NodeDelivery[]>;
  cache: SandboxClaim[];
  live?: SandboxClaim[];
  ensure?: (name: string) => SandboxClaim;
  unreachable?: string;
  /** Namespaces where claim Secrets may not be written. */
  secretsRefused?: string[];
}) {
  const calls = { lists: 0, tokens: 0, gets: 0, records: [] as string[], creates: [] as string[], releases: [] as string[] };
  const accessAsked: string[] = [];
  const live = o.live ?? o.cache;
  const inventories: InventoryLike[] = Object.keys(o.deliveries).map((node) => ({
    metadata: { name: node },
    node,
    address: `10.0.0.${node.length}:7777`,
    pools: [],
  }));
  const outcomes: OrphanOutcome[] = [];
  const pass = new OrphanReconciler({
    gateway: {
      listDeliveries: async (inv) => {
        calls.lists++;
        if (inv.node === o.unreachable) throw new Error('connect ECONNREFUSED');
        return o.deliveries[inv.node] ?? [];
      },
      withToken: async (d) => {
        calls.tokens++;
        return { ...d, assignment: { ...d.assignment, token: `token-of-${d.assignment.claimId}` } };
      },
      release: async (t) => {
        calls.releases.push(`${t.node}/${t.claimId}`);
      },
    },
    recorder: {
      recordBoundOn: async (c, _t, a) => {
        expect(a.token).toBe(`token-of-${a.claimId}`);
        calls.records.push(`${c.metadata.name}=${a.claimId}`);
        return c;
      },
    },
    fastPath: {
      ensureClaim: async (d) => {
        calls.creates.push(d.name);
        if (!o.ensure) throw new Error('unexpected create');
        return o.ensure(d.name);
      },
    },
    poolFor: () => 'base',
    inventories: () => inventories,
    cachedClaim: (_ns, name) => o.cache.find((c) => c.metadata.name === name),
    getClaim: async (_ns, name) => {
      calls.gets++;
      const c = live.find((x) => x.metadata.name === name);
      if (!c) throw new ApiException(404, 'not found', JSON.stringify({ kind: 'Status', code: 404, reason: 'NotFound' }), {});
      return c;
    },
    refKey: KEY,
    secretAccess: {
      check: async (ns) => {
        accessAsked.push(ns);
        const refused = o.secretsRefused?.includes(ns) ?? false;
        return { allowed: !refused, reason: refused ? 'no RoleBinding' : '' };
      },
      forget: () => undefined,
    },
    intervalMs: 60_000,
    log: createLogger({ name: 'test', level: 'silent' }),
    onItem: (x) => outcomes.push(x),
  });
  return { pass, calls, outcomes, accessAsked };
}

const delivery = (owner: SandboxOwner | string, id: string, node = 'n1'): NodeDelivery => ({
  claimRef: typeof owner === 'string' ? owner : formatOwnerRef(owner, KEY),
  key: { template: 'img', net: 'none', size: 'small' },
  assignment: { claimId: id, node, address: '10.0.0.2:7777', token: '' },
});

describe('OrphanReconciler pass', () => {
  it('costs one list per node and nothing else when every delivery is recorded or not a claim', async () => {
    const bound = Array.from({ length: 50 }, (_, i) =>
      claim(`c${i}`, { uid: `${UID.slice(0, -2)}${String(i).padStart(2, '0')}`, sandbox: `sb_${i}`, bound: 'True' }),
    );
    const mine = bound.map((c, i) =>
      delivery({ ...claimOwner, name: c.metadata.name ?? '', uid: c.metadata.uid ?? '' }, `sb_${i}`, i % 2 ? 'n1' : 'n22'),
    );
    const others = [
      delivery({ ...claimOwner, kind: 'Sandbox' }, 'sb_s'),
      delivery({ ...claimOwner, kind: 'ForkChild' }, 'sb_f'),
      delivery({ ...claimOwner, kind: 'SnapshotClaim' }, 'sb_p'),
      delivery('ns/legacy', 'sb_l'),
    ];
    const gone = delivery({ ...claimOwner, name: 'deleted' }, 'sb_d');
    const { pass, calls, outcomes } = harness({
      deliveries: {
        n1: [...mine.filter((d) => d.assignment.node === 'n1'), ...others, gone],
        n22: mine.filter((d) => d.assignment.node === 'n22'),
      },
      cache: bound,
    });
    expect(await pass.reconcileAll()).toEqual({ adopted: 0, errors: 0 });
    expect(calls).toEqual({ lists: 2, tokens: 0, gets: 0, records: [], creates: [], releases: [] });
    expect(outcomes.filter((x) => x === 'bound')).toHaveLength(50);
    expect(outcomes.filter((x) => x === 'foreign')).toHaveLength(4);
    expect(outcomes.filter((x) => x === 'missing')).toHaveLength(1);
  });

  it('acts on no reference it did not write: no claim created, nothing recorded or released, not even a request', async () => {
    const forged = [
      delivery(`fastclaim:${UID}:victim/f1`, 'sb_1'),
      delivery(`claim:${UID}:victim/c1`, 'sb_2'),
      delivery(formatOwnerRef({ ...fastOwner, namespace: 'victim' }, new OwnerRefKey(randomBytes(32))), 'sb_3'),
    ];
    const { pass, calls, outcomes, accessAsked } = harness({
      deliveries: { n1: forged },
      cache: [],
      ensure: () => claim('f1', { uid: OTHER, deliveryUid: UID }),
    });
    expect(await pass.reconcileAll()).toEqual({ adopted: 0, errors: 0 });
    expect(calls).toEqual({ lists: 1, tokens: 0, gets: 0, records: [], creates: [], releases: [] });
    expect(accessAsked).toEqual([]);
    expect(outcomes).toEqual(['unproven', 'unproven', 'unproven']);
  });

  it('creates no claim and writes no token Secret where claim Secrets may not be written, as the bind path', async () => {
    const refused = harness({
      deliveries: { n1: [delivery(fastOwner, 'sb_9'), delivery(claimOwner, 'sb_1')] },
      cache: [claim('c1')],
      ensure: () => claim('f1', { uid: OTHER, deliveryUid: UID }),
      secretsRefused: ['ns'],
    });
    expect(await refused.pass.reconcileAll()).toEqual({ adopted: 0, errors: 0 });
    expect(refused.calls.creates).toEqual([]);
    expect(refused.calls.records).toEqual([]);
    expect(refused.calls.tokens).toBe(0);
    expect(refused.outcomes).toEqual(['not_enabled', 'not_enabled']);
    expect(refused.accessAsked).toEqual(['ns', 'ns']);
  });

  it('adopts a delivery the cache shows unrecorded after confirming it live: one Get, one token read', async () => {
    const { pass, calls, outcomes } = harness({ deliveries: { n1: [delivery(claimOwner, 'sb_1')] }, cache: [claim('c1')] });
    expect(await pass.reconcileAll()).toEqual({ adopted: 1, errors: 0 });
    expect(calls).toEqual({ lists: 1, tokens: 1, gets: 1, records: ['c1=sb_1'], creates: [], releases: [] });
    expect(outcomes).toEqual(['adopted']);
  });

  it('does not write when the live claim is already Bound (the cache lagged), nor read the token', async () => {
    const { pass, calls, outcomes } = harness({
      deliveries: { n1: [delivery(claimOwner, 'sb_1')] },
      cache: [claim('c1')],
      live: [claim('c1', { sandbox: 'sb_1', bound: 'True' })],
    });
    expect(await pass.reconcileAll()).toEqual({ adopted: 0, errors: 0 });
    expect(calls).toEqual({ lists: 1, tokens: 0, gets: 1, records: [], creates: [], releases: [] });
    expect(outcomes).toEqual(['bound']);
  });

  it('does not write onto a claim deleted and created again since the cache saw it', async () => {
    const { pass, calls, outcomes } = harness({
      deliveries: { n1: [delivery(claimOwner, 'sb_1')] },
      cache: [claim('c1')],
      live: [claim('c1', { uid: OTHER })],
    });
    await pass.reconcileAll();
    expect(calls.records).toEqual([]);
    expect(calls.tokens).toBe(0);
    expect(outcomes).toEqual(['foreign']);
  });

  it('releases a second delivery of a claim that holds another sandbox, after the live claim confirms it', async () => {
    const { pass, calls, outcomes } = harness({
      deliveries: { n1: [delivery(claimOwner, 'sb_1')] },
      cache: [claim('c1', { sandbox: 'sb_2', bound: 'True' })],
    });
    expect(await pass.reconcileAll()).toEqual({ adopted: 0, errors: 0 });
    expect(calls).toEqual({ lists: 1, tokens: 0, gets: 1, records: [], creates: [], releases: ['n1/sb_1'] });
    expect(outcomes).toEqual(['released']);
  });

  it('releases nothing when the live claim does not confirm the cache: it records this sandbox, or is gone', async () => {
    const stale = harness({
      deliveries: { n1: [delivery(claimOwner, 'sb_1')] },
      cache: [claim('c1', { sandbox: 'sb_2', bound: 'True' })],
      live: [claim('c1', { sandbox: 'sb_1', bound: 'True' })],
    });
    await stale.pass.reconcileAll();
    expect(stale.calls.releases).toEqual([]);
    expect(stale.outcomes).toEqual(['bound']);
    const gone = harness({ deliveries: { n1: [delivery(claimOwner, 'sb_1')] }, cache: [claim('c1', { sandbox: 'sb_2' })], live: [] });
    await gone.pass.reconcileAll();
    expect(gone.calls.releases).toEqual([]);
    expect(gone.outcomes).toEqual(['missing']);
  });

  it('creates the missing claim of a fast-path delivery and records it, without a Get', async () => {
    const created = claim('f1', { uid: OTHER, deliveryUid: UID });
    const { pass, calls, outcomes } = harness({ deliveries: { n1: [delivery(fastOwner, 'sb_9')] }, cache: [], ensure: () => created });
    expect(await pass.reconcileAll()).toEqual({ adopted: 1, errors: 0 });
    expect(calls).toEqual({ lists: 1, tokens: 1, gets: 0, records: ['f1=sb_9'], creates: ['f1'], releases: [] });
    expect(outcomes).toEqual(['created']);
  });

  it('a fast-path claim the cache had not seen yet and already Bound costs no token read and no write', async () => {
    const { pass, calls, outcomes } = harness({
      deliveries: { n1: [delivery(fastOwner, 'sb_9')] },
      cache: [],
      ensure: () => claim('f1', { uid: OTHER, deliveryUid: UID, sandbox: 'sb_9', bound: 'True' }),
    });
    await pass.reconcileAll();
    expect(calls.tokens).toBe(0);
    expect(calls.records).toEqual([]);
    expect(outcomes).toEqual(['bound']);
  });

  it('a fast-path name taken by another claim is foreign, not an error', async () => {
    const { pass, calls, outcomes } = harness({
      deliveries: { n1: [delivery(fastOwner, 'sb_9')] },
      cache: [],
      ensure: () => {
        throw new ClaimOwnerMismatchError('taken');
      },
    });
    expect(await pass.reconcileAll()).toEqual({ adopted: 0, errors: 0 });
    expect(calls.records).toEqual([]);
    expect(outcomes).toEqual(['foreign']);
  });

  it('counts a node it cannot list and goes on with the next', async () => {
    const { pass, calls, outcomes } = harness({
      deliveries: { n22: [], n1: [delivery(claimOwner, 'sb_1')] },
      cache: [claim('c1')],
      unreachable: 'n22',
    });
    expect(await pass.reconcileAll()).toEqual({ adopted: 1, errors: 1 });
    expect(outcomes.sort()).toEqual(['adopted', 'error']);
    expect(calls.records).toEqual(['c1=sb_1']);
  });
});
