import { randomBytes } from 'node:crypto';
import { createLogger, type ReconcileContext } from '@sandbox-scale/kube-runtime';
import {
  ANNOTATIONS,
  CLAIM_RELEASE_FINALIZER,
  formatOwnerRef,
  NoWarmCapacityError,
  OwnerRefKey,
  type SandboxClaim,
  type SandboxTemplate,
  type SandboxWarmPool,
} from '@sandbox-scale/scale-core';
import type { Assignment } from '../gateway/assignment';
import type { GatewayClaimRequest } from '../gateway/claim-gateway';
import { ClaimReconciler } from './claim-reconciler';
import type { EarlierDeliveryQuery } from './earlier-deliveries';

const NS = 'team-a';
const LEADING_SINCE = new Date('2026-01-01T12:00:00Z');
const UID = '7c9e6679-7425-40de-944b-e07fc1f90ae7';
const KEY = new OwnerRefKey(randomBytes(32));
const delivered: Assignment = { claimId: 'sb_1', node: 'n1', address: '10.0.0.1:7000', token: 'tok' };

const pool: SandboxWarmPool = {
  apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
  kind: 'SandboxWarmPool',
  metadata: { name: 'base', namespace: NS },
  spec: { replicas: 1, sandboxTemplateRef: { name: 'base' } },
} as SandboxWarmPool;
const template: SandboxTemplate = {
  apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
  kind: 'SandboxTemplate',
  metadata: { name: 'base', namespace: NS },
  spec: { podTemplate: { spec: { containers: [{ name: 'main', image: 'img:1' }] } } },
} as SandboxTemplate;

function claimOf(o: { created: string; finalizer?: boolean; hint?: string }): SandboxClaim {
  return {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxClaim',
    metadata: {
      name: 'c1',
      namespace: NS,
      uid: UID,
      resourceVersion: '10',
      creationTimestamp: o.created,
      ...(o.finalizer ? { finalizers: [CLAIM_RELEASE_FINALIZER] } : {}),
      ...(o.hint ? { annotations: { [ANNOTATIONS.deliveryNode]: o.hint } } : {}),
    },
    spec: { warmPoolRef: { name: 'base' } },
  } as SandboxClaim;
}

const notFound = (): Error => Object.assign(new Error('not found'), { code: 404 });

/**
 * The reconciler with fakes for everything it talks to; `steps` records what reached the API
 * server and the nodes, in order.
 */
function harness(
  claim: SandboxClaim | undefined,
  o: {
    earlier?: (q: EarlierDeliveryQuery) => Promise<Assignment | undefined>;
    finalizer?: () => Promise<void>;
    record?: () => Promise<void>;
    noCapacity?: boolean;
    /** The pool allows cold starts, and the cold claim finds no routable node either. */
    coldFails?: boolean;
    /** What the node answers when asked for a sandbox: true = it has it, false = 404, an Error = no answer. */
    holds?: boolean | Error;
    /** Claims an inventory showed missing (ns/name -> id). */
    suspects?: Map<string, string>;
  } = {},
) {
  const steps: string[] = [];
  const cache = { claim };
  const reconciler = new ClaimReconciler({
    claims: { get: () => cache.claim, on: () => () => undefined },
    pools: { get: () => (o.coldFails ? ({ ...pool, spec: { ...pool.spec, coldStart: 'WhenNoWarmCapacity' } } as SandboxWarmPool) : pool) },
    templates: { get: () => template },
    gateway: {
      deliver: async (req: GatewayClaimRequest) => {
        steps.push('deliver: choose node');
        if (o.noCapacity) throw new NoWarmCapacityError(req.key);
        req.onFirstNode?.('n1');
        steps.push('deliver: claim sent to n1');
        await Promise.resolve();
        steps.push('deliver: n1 answered');
        return delivered;
      },
      coldDeliver: async (req: GatewayClaimRequest) => {
        steps.push('cold deliver');
        if (o.coldFails) throw new NoWarmCapacityError(req.key);
        return delivered;
      },
      release: async (t) => {
        steps.push(`release ${t.claimId}`);
      },
      renew: async () => undefined,
      claimRefOf: (owner) => formatOwnerRef(owner, KEY),
      holds: async (t) => {
        steps.push(`holds ${t.claimId} on ${t.node}`);
        if (o.holds instanceof Error) throw o.holds;
        return o.holds ?? true;
      },
    },
    presence: {
      takeSuspect: (key, id) => {
        const marked = o.suspects?.get(key);
        o.suspects?.delete(key);
        return marked === id;
      },
    },
    earlier: {
      find: async (q) => {
        steps.push(`earlier: ${q.claimRef} hint=${q.hint ?? '-'}`);
        return o.earlier ? o.earlier(q) : undefined;
      },
    },
    recorder: {
      recordBoundOn: async (c, target, a, _signal, opts) => {
        steps.push(`record ${a.claimId} on rv ${c.metadata.resourceVersion} adopted=${opts?.adopted ?? false}`);
        await o.record?.();
        return {
          ...c,
          metadata: { ...c.metadata, resourceVersion: '12' },
          status: { sandbox: { name: target.name, claimID: a.claimId, nodeName: a.node } },
        } as SandboxClaim;
      },
    },
    claimClient: {
      get: async () => {
        steps.push('get');
        if (cache.claim === undefined) throw notFound();
        return cache.claim;
      },
      setCondition: async (c, cond) => {
        steps.push(`condition ${cond.type}=${cond.status} ${cond.reason}`);
        // the object as written: the condition set on it
        const others = (c.status?.conditions ?? []).filter((k) => k.type !== cond.type);
        const conditions = [...others, { ...cond, lastTransitionTime: '2026-01-01T12:05:00Z' }];
        return { ...c, status: { ...c.status, conditions } } as SandboxClaim;
      },
      addFinalizer: async (c, _signal, node) => {
        steps.push(`finalizer patch hint=${node ?? '-'}`);
        await o.finalizer?.();
        return {
          ...c,
          metadata: {
            ...c.metadata,
            resourceVersion: '11',
            finalizers: [CLAIM_RELEASE_FINALIZER],
            ...(node ? { annotations: { [ANNOTATIONS.deliveryNode]: node } } : {}),
          },
        };
      },
      removeFinalizer: async () => undefined,
      delete: async () => undefined,
    },
    events: { record: () => undefined },
    secretAccess: { check: async () => ({ allowed: true, reason: '' }), forget: () => undefined },
    leadingSince: () => LEADING_SINCE,
    now: () => new Date('2026-01-01T12:05:00Z'),
  });
  const ctx: ReconcileContext = {
    signal: new AbortController().signal,
    log: createLogger({ name: 'test', level: 'silent' }),
    reconcileId: 'r',
  };
  return { reconciler, steps, cache, reconcile: () => reconciler.reconcile({ namespace: NS, name: 'c1' }, ctx) };
}

const AFTER = '2026-01-01T12:01:00Z';
const BEFORE = '2026-01-01T11:59:00Z';

describe('ClaimReconciler: binding a claim', () => {
  it('sends the finalizer patch with the first node as its hint while that node is asked, then records on the patched object', async () => {
    const h = harness(claimOf({ created: AFTER }));
    await h.reconcile();
    expect(h.steps).toEqual([
      'deliver: choose node',
      'finalizer patch hint=n1',
      'deliver: claim sent to n1',
      'deliver: n1 answered',
      'record sb_1 on rv 11 adopted=false',
    ]);
  });

  it('adds no write where admission added the finalizer: no patch, no hint', async () => {
    const h = harness(claimOf({ created: AFTER, finalizer: true }));
    await h.reconcile();
    expect(h.steps).toEqual([
      'deliver: choose node',
      'deliver: claim sent to n1',
      'deliver: n1 answered',
      'record sb_1 on rv 10 adopted=false',
    ]);
  });

  it('adds the finalizer without a hint after an attempt that found no node, and says NoWarmCapacity', async () => {
    const h = harness(claimOf({ created: AFTER }), { noCapacity: true });
    const r = await h.reconcile();
    expect(h.steps).toEqual(['deliver: choose node', 'finalizer patch hint=-', 'condition Bound=False NoWarmCapacity']);
    expect(r).toMatchObject({ requeueAfterMs: expect.any(Number) });
  });

  it('decides after a failed cold start on the ColdStart it wrote, without reading the claim again', async () => {
    const h = harness(claimOf({ created: AFTER }), { noCapacity: true, coldFails: true });
    const r = await h.reconcile();
    expect(h.steps).toEqual([
      'deliver: choose node',
      'finalizer patch hint=-',
      'condition Bound=False ColdStart',
      'cold deliver',
      'condition Bound=False NoWarmCapacity',
    ]);
    expect(r).toMatchObject({ requeueAfterMs: expect.any(Number) });
  });

  it('does not look for earlier deliveries of a claim created during this leadership', async () => {
    const h = harness(claimOf({ created: AFTER }));
    await h.reconcile();
    expect(h.steps.filter((s) => s.startsWith('earlier'))).toEqual([]);
  });
});

describe('ClaimReconciler: a claim older than this leadership', () => {
  it('adopts the delivery an earlier leader made, asking with its claim_ref and hint, and claims nothing', async () => {
    const h = harness(claimOf({ created: BEFORE, finalizer: true, hint: 'n2' }), {
      earlier: async () => ({ ...delivered, node: 'n2', claimId: 'sb_9' }),
    });
    await h.reconcile();
    expect(h.steps).toEqual([
      `earlier: ${formatOwnerRef({ kind: 'SandboxClaim', uid: UID, namespace: NS, name: 'c1' }, KEY)} hint=n2`,
      'record sb_9 on rv 10 adopted=true',
    ]);
  });

  it('claims when no node holds a delivery for it', async () => {
    const h = harness(claimOf({ created: BEFORE }));
    await h.reconcile();
    expect(h.steps[0]).toBe(`earlier: ${formatOwnerRef({ kind: 'SandboxClaim', uid: UID, namespace: NS, name: 'c1' }, KEY)} hint=-`);
    expect(h.steps).toContain('deliver: n1 answered');
  });

  it('claims nothing while the nodes cannot be asked (the pass fails and is retried)', async () => {
    const h = harness(claimOf({ created: BEFORE }), { earlier: async () => Promise.reject(new Error('node n3 does not answer')) });
    await expect(h.reconcile()).rejects.toThrow('node n3 does not answer');
    expect(h.steps.filter((s) => s.startsWith('deliver') || s.startsWith('record'))).toEqual([]);
  });
});

describe('ClaimReconciler: a delivery whose record has not landed', () => {
  it('keeps the delivery when the record fails and records it on the next pass, never claiming again', async () => {
    let failRecord = true;
    const h = harness(claimOf({ created: AFTER }), {
      record: async () => {
        if (failRecord) throw new Error('apiserver away');
      },
    });
    const first = await h.reconcile();
    expect(first).toMatchObject({ requeueAfterMs: expect.any(Number) });
    expect(h.steps).toContain('condition Bound=False RecordFailed');
    failRecord = false;
    h.steps.length = 0;
    await h.reconcile();
    expect(h.steps.filter((s) => s.startsWith('deliver') || s.startsWith('earlier'))).toEqual([]);
    expect(h.steps).toContain('record sb_1 on rv 11 adopted=true');
  });

  it('releases the delivered VM when the claim was deleted while the node was asked (the finalizer patch answers 404)', async () => {
    const h = harness(claimOf({ created: AFTER }), {
      finalizer: async () => {
        h.cache.claim = undefined;
        throw notFound();
      },
    });
    await h.reconcile();
    expect(h.steps.slice(-2)).toEqual(['get', 'release sb_1']);
    expect(h.steps.filter((s) => s.startsWith('record'))).toEqual([]);
  });
});

/** A claim Bound to sb_1 on n1 at 12:00 with a node lease until 12:15 (its renewal is minutes away at 12:05). */
function boundClaim(): SandboxClaim {
  const c = claimOf({ created: BEFORE, finalizer: true });
  return {
    ...c,
    status: {
      sandbox: { name: 'c1', claimID: 'sb_1', nodeName: 'n1', address: '10.0.0.1:7000', deadline: '2026-01-01T12:15:00Z' },
      conditions: [{ type: 'Bound', status: 'True', reason: 'NodeLocalClaim', message: '', lastTransitionTime: '2026-01-01T12:00:00Z' }],
    },
  } as SandboxClaim;
}

describe('ClaimReconciler: a Bound claim its node inventory no longer lists', () => {
  it('asks the node once and marks the claim SandboxLost when the node answers 404', async () => {
    const h = harness(boundClaim(), { holds: false, suspects: new Map([[`${NS}/c1`, 'sb_1']]) });
    await h.reconcile();
    expect(h.steps).toEqual(['holds sb_1 on n1', 'condition Bound=False SandboxLost']);
  });

  it('keeps the claim Bound when the node still has the sandbox (an inventory published before the bind)', async () => {
    const h = harness(boundClaim(), { holds: true, suspects: new Map([[`${NS}/c1`, 'sb_1']]) });
    const r = await h.reconcile();
    expect(h.steps).toEqual(['holds sb_1 on n1']);
    expect(r).toMatchObject({ requeueAfterMs: expect.any(Number) });
  });

  it('keeps the claim Bound when the node does not answer', async () => {
    const h = harness(boundClaim(), { holds: new Error('connect ECONNREFUSED'), suspects: new Map([[`${NS}/c1`, 'sb_1']]) });
    await h.reconcile();
    expect(h.steps).toEqual(['holds sb_1 on n1']);
  });

  it('asks nothing of the node for a claim no inventory showed missing, nor for a mark left by another sandbox of the name', async () => {
    const unmarked = harness(boundClaim(), { holds: false });
    await unmarked.reconcile();
    const other = harness(boundClaim(), { holds: false, suspects: new Map([[`${NS}/c1`, 'sb_old']]) });
    await other.reconcile();
    expect([...unmarked.steps, ...other.steps]).toEqual([]);
  });
});
