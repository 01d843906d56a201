import { randomBytes } from 'node:crypto';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import {
  applyCrds,
  createTestNamespace,
  deleteNamespace,
  eventually,
  installChartAppRbac,
  kubectl,
  runSuffix,
  serviceAccountToken,
  startControlPlane,
  type ControlPlane,
  type ChartAppIdentity,
} from '@sandbox-scale/e2e';
import { createLogger, ResourceClient } from '@sandbox-scale/kube-runtime';
import { grantRole } from '@sandbox-scale/kube-runtime/testing';
import { SandboxdClient } from '@sandbox-scale/sandboxd-client';
import { FAST_PATH_AUDIENCE, formatOwnerRef, parseOwnerRef, poolKeyFor, OwnerRefKey } from '@sandbox-scale/scale-core';
import { startSim, type Sim } from '@sandbox-scale/sandboxd-sim';
import { Agent, request } from 'undici';
import { startClaimController, type ClaimControllerHandle } from '../src';
import { SandboxClaimResource } from '../src/resources';
import { ClaimRecorder } from '../src/record/claim-recorder';
import { FastPathRecorder } from '../src/record/fast-path-recorder';
import {
  boundCondition,
  createClaim,
  createPool,
  deleteInventories,
  eventsOf,
  getClaim,
  liveDeliveries,
  publishInventories,
  releases,
  ROOT_TOKEN,
  waitForBound,
  waitForWarmPools,
} from './fixtures';

/** The key every process of this test proves claim references with. */
const CLAIM_REF_KEY = new OwnerRefKey(randomBytes(32));

const suffix = runSuffix();
const IMAGE = `registry.local/cc-${suffix}:1`;
const EMPTY_IMAGE = `registry.local/cc-empty-${suffix}:1`;
const COLD_IMAGE = `registry.local/cc-cold-${suffix}:1`;
const NEVER_IMAGE = `registry.local/cc-never-${suffix}:1`;
let cp: ControlPlane;
let kc: KubeConfig;
let ns: string;
let sim: Sim;
let cc: ClaimControllerHandle;
let identity: ChartAppIdentity;
const insecure = new Agent({ connect: { rejectUnauthorized: false } });

beforeAll(async () => {
  // A control plane of its own: this controller runs as the chart does, unscoped, so on the shared
  // one it would also reconcile the claims, and read the NodeInventories, of the suites beside it.
  cp = await startControlPlane();
  kc = cp.kubeConfig;
  await applyCrds(kc, 'charts/sandbox-scale/crds');
  ns = await createTestNamespace(kc, 'claimctl');
  // speed 0.01: a cold boot takes a few ms, but it is a real blocking provision, not an instant one
  sim = await startSim({ nodes: 2, speed: 0.01, token: ROOT_TOKEN, pools: [{ template: IMAGE, warm: 4 }] });
  // at speed > 0 the warm pools fill after their golden build: publish the filled snapshot
  await waitForWarmPools(sim, ROOT_TOKEN, IMAGE, 4);
  await publishInventories(kc, sim, suffix);
  await createPool(kc, ns, 'base', IMAGE);
  // the deployed shape: the chart's ServiceAccount and RBAC, never the admin kubeconfig
  identity = await installChartAppRbac(kc, 'claim-controller', { release: `cc-${suffix}`, namespace: ns });
  cc = await startClaimController({
    claimRefKey: CLAIM_REF_KEY,
    kubeConfig: identity.kubeConfig,
    fleetToken: ROOT_TOKEN,
    flags: { metricsBindAddress: '0', healthProbeBindAddress: '0', fastPathBindAddress: '127.0.0.1:0', orphanInterval: 3_600_000 },
    log: createLogger({ name: 'claim-controller-test', level: 'warn' }),
  });
});

afterAll(async () => {
  await cc?.stop();
  await identity?.remove();
  await deleteInventories(kc, sim, suffix);
  await sim?.stop();
  await deleteNamespace(kc, ns);
  await insecure.close();
  await cp?.stop();
});

async function waitBound(name: string) {
  return waitForBound(kc, ns, name, 30_000);
}

describe('SandboxClaim path', () => {
  it('marks the claim Bound after a node hands over a warm VM, with the token only in the owned Secret', async () => {
    await createClaim(kc, ns, 'c1', 'base');
    const c = await waitBound('c1');
    expect(boundCondition(c)?.reason).toBe('NodeLocalClaim');
    const sb = c.status?.sandbox ?? {};
    // the served Sandbox's name (the claim's), and the node's claim id apart
    expect(sb.name).toBe('c1');
    expect(sb.claimID).toMatch(/^sb_/);
    expect(sb.podIPs).toEqual(['127.0.0.1']);
    expect(sb.address).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(sb.deadline).toMatch(/Z$/);
    expect(c.metadata.finalizers).toContain('sandbox.cocoonstack.io/release');
    const node = sim.nodes.find((n) => sb.nodeName?.startsWith(n.name));
    expect(node).toBeDefined();
    const detail = await new SandboxdClient({ baseUrl: node?.url ?? '', token: ROOT_TOKEN }).sandbox(sb.claimID ?? '');
    // the node records the owner exactly: this SandboxClaim, by uid
    expect(detail.claimRef).toBe(
      formatOwnerRef({ kind: 'SandboxClaim', uid: c.metadata.uid ?? '', namespace: ns, name: 'c1' }, CLAIM_REF_KEY),
    );
    const token = detail.token ?? '';
    expect(token).not.toBe('');

    const secret = await kc.makeApiClient(CoreV1Api).readNamespacedSecret({ namespace: ns, name: sb.tokenSecretName ?? '' });
    expect(Buffer.from(secret.data?.token ?? '', 'base64').toString()).toBe(token);
    expect(secret.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'SandboxClaim', name: 'c1', uid: c.metadata.uid });

    const claimJson = await kubectl(['get', 'sandboxclaim', 'c1', '-n', ns, '-o', 'json'], { kubeconfig: cp.kubeconfigPath });
    expect(claimJson.code).toBe(0);
    expect(claimJson.stdout).not.toContain(token);
    // a claim bound on the success path is announced on its pool (one series event), not by an
    // Event per claim: its Bound condition says where (node, sandbox) and since when
    const events = await eventually(async () => {
      const r = await kubectl(['get', 'events', '-n', ns, '-o', 'json'], { kubeconfig: cp.kubeconfigPath });
      if (!r.stdout.includes('ClaimsBound')) throw new Error('no ClaimsBound event on the pool yet');
      return r.stdout;
    });
    expect(events).not.toContain(token);
    expect((await eventsOf(ns, 'base', cp.kubeconfigPath)).filter((e) => e.reason === 'ClaimsBound')).toHaveLength(1);
    expect((await eventsOf(ns, 'c1', cp.kubeconfigPath)).map((e) => e.reason)).not.toContain('NodeLocalClaim');
    const described = await kubectl(['describe', 'sandboxclaim', 'c1', '-n', ns], { kubeconfig: cp.kubeconfigPath });
    expect(described.code).toBe(0);
    expect(described.stdout).toContain(`handed over sandbox ${sb.claimID}`);
    expect(described.stdout).toContain(String(boundCondition(c)?.lastTransitionTime));
    expect(described.stdout).not.toContain(token);
  });

  it('releases the VM on the node when the claim is deleted, then lets the claim go', async () => {
    await createClaim(kc, ns, 'c-del', 'base');
    const c = await waitBound('c-del');
    const before = releases(sim);
    await new ResourceClient(kc, SandboxClaimResource).delete(ns, 'c-del');
    await eventually(async () => {
      const r = await kubectl(['get', 'sandboxclaim', 'c-del', '-n', ns], { kubeconfig: cp.kubeconfigPath });
      if (r.code === 0) throw new Error('claim still there');
    });
    expect(releases(sim)).toBe(before + 1);
    const live = await liveDeliveries(sim, ns);
    expect(live.map((d) => d.id)).not.toContain(c.status?.sandbox?.claimID);
  });

  it('names the field of a claim whose pool does not exist, without claiming', async () => {
    const before = (await liveDeliveries(sim, ns)).length;
    await createClaim(kc, ns, 'c-nopool', 'missing-pool');
    await eventually(async () => {
      const b = boundCondition(await getClaim(kc, ns, 'c-nopool'));
      if (b?.reason !== 'WarmPoolNotFound') throw new Error(`condition ${JSON.stringify(b)}`);
      expect(b.status).toBe('False');
      expect(b.message).toContain('spec.warmPoolRef.name');
    });
    expect((await liveDeliveries(sim, ns)).length).toBe(before);
  });

  it('rejects a shutdownTime in the past with a condition naming the field', async () => {
    await createClaim(kc, ns, 'c-past', 'base', { lifecycle: { shutdownTime: '2020-01-01T00:00:00Z' } });
    await eventually(async () => {
      const b = boundCondition(await getClaim(kc, ns, 'c-past'));
      if (b?.reason !== 'InvalidSpec') throw new Error(`condition ${JSON.stringify(b)}`);
      expect(b.message).toContain('spec.lifecycle.shutdownTime');
    });
  });

  it('reports NoWarmCapacity for an empty pool and binds once capacity appears', async () => {
    await createPool(kc, ns, 'empty', EMPTY_IMAGE);
    await createClaim(kc, ns, 'c-wait', 'empty');
    await eventually(async () => {
      const b = boundCondition(await getClaim(kc, ns, 'c-wait'));
      if (b?.reason !== 'NoWarmCapacity') throw new Error(`condition ${JSON.stringify(b)}`);
      expect(b.status).toBe('False');
    });
    const node = sim.nodes[0];
    await new SandboxdClient({ baseUrl: node?.url ?? '', token: ROOT_TOKEN }).setPools([
      { template: IMAGE, warm: 4 },
      { template: EMPTY_IMAGE, warm: 2 },
    ]);
    await eventually(async () => {
      const info = await new SandboxdClient({ baseUrl: node?.url ?? '', token: ROOT_TOKEN }).info();
      if (!info.pools.some((p) => p.key.template === EMPTY_IMAGE && p.warm > 0)) throw new Error('not warm yet');
    });
    await publishInventories(kc, sim, suffix);
    const c = await waitBound('c-wait');
    expect(c.status?.sandbox?.nodeName).toBe(`${node?.name}-${suffix}`);
  });

  it('cold-starts a claim on a routable node when no node has warm capacity and the pool allows it', async () => {
    await createPool(kc, ns, 'cold', COLD_IMAGE, { replicas: 0, coldStart: 'WhenNoWarmCapacity' });
    const coldBefore = sim.nodes.reduce((sum, n) => sum + sim.node(n.name).state.metrics.claimsCold, 0);
    await createClaim(kc, ns, 'c-cold', 'cold');
    const c = await waitBound('c-cold');
    expect(boundCondition(c)?.reason).toBe('NodeLocalClaim');
    const sb = c.status?.sandbox ?? {};
    const node = sim.nodes.find((n) => sb.nodeName === `${n.name}-${suffix}`);
    expect(node).toBeDefined();
    const detail = await new SandboxdClient({ baseUrl: node?.url ?? '', token: ROOT_TOKEN }).sandbox(sb.claimID ?? '');
    expect(parseOwnerRef(detail.claimRef)).toEqual({ kind: 'SandboxClaim', uid: c.metadata.uid, namespace: ns, name: 'c-cold' });
    expect(detail.key.template).toBe(COLD_IMAGE);
    expect(sim.nodes.reduce((sum, n) => sum + sim.node(n.name).state.metrics.claimsCold, 0)).toBe(coldBefore + 1);
    // exactly one delivery for the claim
    expect((await liveDeliveries(sim, ns)).filter((d) => parseOwnerRef(d.claimRef)?.name === 'c-cold')).toHaveLength(1);
    const events = await eventually(async () => {
      const evs = await eventsOf(ns, 'c-cold', cp.kubeconfigPath);
      if (!evs.some((e) => e.reason === 'ColdStart' && e.note.includes('cold-started sandbox')))
        throw new Error(`no cold-start bind event yet: ${JSON.stringify(evs)}`);
      return evs;
    });
    expect(events.some((e) => e.reason === 'ColdStart' && e.note.includes('cold-starting'))).toBe(true);
    // the bind itself is on the pool's ClaimsBound series; the claim keeps its cold-start events
    expect(events.map((e) => e.reason)).not.toContain('NodeLocalClaim');
  });

  it('never cold-starts for a pool with coldStart Never: the claim stays NoWarmCapacity', async () => {
    await createPool(kc, ns, 'never', NEVER_IMAGE, { replicas: 0, coldStart: 'Never' });
    await createClaim(kc, ns, 'c-never', 'never');
    await eventually(async () => {
      const b = boundCondition(await getClaim(kc, ns, 'c-never'));
      if (b?.reason !== 'NoWarmCapacity') throw new Error(`condition ${JSON.stringify(b)}`);
      expect(b.status).toBe('False');
    });
    expect((await liveDeliveries(sim, ns)).filter((d) => parseOwnerRef(d.claimRef)?.name === 'c-never')).toHaveLength(0);
    expect((await eventsOf(ns, 'c-never', cp.kubeconfigPath)).map((e) => e.reason)).not.toContain('ColdStart');
  });

  it('adopts a delivery whose record was lost, once, and never releases it (OrphanBindingConverges)', async () => {
    // A claim the reconciler cannot claim for (unknown pool), delivered behind its back.
    await createClaim(kc, ns, 'c-orphan', 'not-a-pool');
    await eventually(async () => {
      if (boundCondition(await getClaim(kc, ns, 'c-orphan'))?.reason !== 'WarmPoolNotFound') throw new Error('not reconciled yet');
    });
    const before = releases(sim);
    const node = sim.nodes[1];
    const client = new SandboxdClient({ baseUrl: node?.url ?? '', token: ROOT_TOKEN });
    const uid = (await getClaim(kc, ns, 'c-orphan')).metadata.uid ?? '';
    // deliveries naming the claim by a legacy ns/name or by another uid are never adopted
    const legacy = await client.claim({ template: IMAGE, claimRef: `${ns}/c-orphan` });
    const otherUid = await client.claim({
      template: IMAGE,
      claimRef: formatOwnerRef(
        { kind: 'SandboxClaim', uid: '00000000-0000-0000-0000-000000000000', namespace: ns, name: 'c-orphan' },
        CLAIM_REF_KEY,
      ),
    });
    const delivered = await client.claim({
      template: IMAGE,
      claimRef: formatOwnerRef({ kind: 'SandboxClaim', uid, namespace: ns, name: 'c-orphan' }, CLAIM_REF_KEY),
    });
    const first = await cc.orphans.reconcileAll();
    expect(first.adopted).toBeGreaterThanOrEqual(1);
    const c = await waitBound('c-orphan');
    expect(c.status?.sandbox?.claimID).toBe(delivered.id);
    expect((await cc.orphans.reconcileAll()).adopted).toBe(0);
    expect((await getClaim(kc, ns, 'c-orphan')).status?.sandbox?.claimID).toBe(delivered.id);
    expect(releases(sim)).toBe(before);
    // left intact for their owners, not released
    await client.release(legacy.id, {});
    await client.release(otherUid.id, {});
  });
});

describe('fast path POST /v1/claims', () => {
  async function post(body: unknown, token?: string) {
    const r = await request(`${cc.fastPathUrl}/v1/claims`, {
      method: 'POST',
      dispatcher: insecure,
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
    return { status: r.statusCode, body: (await r.body.json()) as Record<string, unknown> };
  }
  function claimerToken(audiences = [FAST_PATH_AUDIENCE]): Promise<string> {
    return serviceAccountToken(kc, ns, 'claimer', audiences);
  }

  it('answers 401 Unauthorized without a valid bearer token', async () => {
    const none = await post({ namespace: ns, warmPool: 'base' });
    expect(none.status).toBe(401);
    expect(none.body).toMatchObject({ kind: 'Status', reason: 'Unauthorized', code: 401 });
    const bad = await post({ namespace: ns, warmPool: 'base' }, 'not-a-token');
    expect(bad.status).toBe(401);
  });

  it("refuses a valid token issued for another audience, the API server's own included", async () => {
    for (const audiences of [[], ['some-other-service']]) {
      const r = await post({ namespace: ns, warmPool: 'base' }, await claimerToken(audiences));
      expect(r.status).toBe(401);
      expect(r.body).toMatchObject({ kind: 'Status', reason: 'Unauthorized', code: 401 });
    }
  });

  it('answers 403 Forbidden to an identity without RBAC, then 200 with the Assignment once bound by a RoleBinding', async () => {
    const token = await claimerToken();
    const denied = await post({ namespace: ns, name: 'fast-1', warmPool: 'base' }, token);
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({ kind: 'Status', reason: 'Forbidden' });
    expect(String(denied.body.message)).toContain(`system:serviceaccount:${ns}:claimer`);

    await grantRole(kc, ns, 'claimer', [{ apiGroups: ['extensions.agents.x-k8s.io'], resources: ['sandboxclaims'], verbs: ['create'] }], {
      name: 'claimer',
      namespace: ns,
    });
    const ok = await eventually(async () => {
      const r = await post({ namespace: ns, name: 'fast-1', warmPool: 'base' }, token);
      if (r.status !== 200) throw new Error(`status ${r.status}: ${JSON.stringify(r.body)}`);
      return r.body;
    });
    expect(ok).toMatchObject({ kind: 'Assignment', namespace: ns, name: 'fast-1' });
    expect(String(ok.claimId)).toMatch(/^sb_/);
    expect(String(ok.token)).not.toBe('');

    const c = await waitBound('fast-1');
    expect(c.status?.sandbox?.claimID).toBe(ok.claimId);
    // the record says who asked: the identity the token's review gave, not a field of the body
    expect(c.metadata.annotations?.['sandbox.cocoonstack.io/requested-by']).toBe(`system:serviceaccount:${ns}:claimer`);
    // a fast-path record is announced on its pool (one series event), not by an Event per claim;
    // the claim's own Bound condition names its node and sandbox
    const poolEvents = await eventually(async () => {
      const evs = (await eventsOf(ns, 'base', cp.kubeconfigPath)).filter((e) => e.reason === 'FastPathClaimsRecorded');
      if (evs.length === 0) throw new Error('no FastPathClaimsRecorded event on the pool yet');
      return evs;
    });
    expect(poolEvents).toHaveLength(1);
    expect((await eventsOf(ns, 'fast-1', cp.kubeconfigPath)).map((e) => e.reason)).not.toContain('NodeLocalClaim');
    expect(boundCondition(c)?.message).toContain(String(ok.claimId));
    const listed = await kubectl(['get', 'sandboxclaims', '-n', ns], { kubeconfig: cp.kubeconfigPath });
    expect(listed.stdout).toContain('fast-1');
    expect(listed.stdout).not.toContain(String(ok.token));
    // one delivery only: the reconciler did not claim the fast-path claim again
    const fast = (await liveDeliveries(sim, ns)).filter((d) => parseOwnerRef(d.claimRef)?.name === 'fast-1');
    expect(fast).toHaveLength(1);
    // owned by the fast-path delivery its SandboxClaim records
    expect(parseOwnerRef(fast[0]?.claimRef)).toEqual({
      kind: 'FastPathClaim',
      uid: c.metadata.annotations?.['sandbox.cocoonstack.io/delivery-uid'],
      namespace: ns,
      name: 'fast-1',
    });
  });

  it('answers 422 naming the field for a bad body', async () => {
    const r = await post({ namespace: ns, warmPool: '' }, await claimerToken());
    expect(r.status).toBe(422);
    expect(JSON.stringify(r.body)).toContain('warmPool');
  });
});

describe('records write only onto their own owner', () => {
  const key = poolKeyFor([{ image: IMAGE }], undefined);
  const recorder = (): ClaimRecorder => new ClaimRecorder({ kubeConfig: identity.kubeConfig });
  const core = (): CoreV1Api => kc.makeApiClient(CoreV1Api);

  it('never overwrites a claim Bound to another sandbox, nor one of the name with another uid', async () => {
    await createClaim(kc, ns, 'r-bound', 'base');
    const c = await waitBound('r-bound');
    const secretName = c.status?.sandbox?.tokenSecretName ?? '';
    const tokenBefore = (await core().readNamespacedSecret({ namespace: ns, name: secretName })).data?.token;
    const other = { claimId: 'sb_00000000000000aa', node: 'elsewhere', address: '10.9.9.9:7777', token: 'not-this-token' };
    const bound: unknown = await recorder()
      .recordBound({ namespace: ns, name: 'r-bound', uid: c.metadata.uid ?? '' }, other)
      .catch((e: unknown) => e);
    expect((bound as Error).name).toBe('ClaimBoundElsewhereError');
    const replaced: unknown = await recorder()
      .recordBound(
        { namespace: ns, name: 'r-bound', uid: '00000000-0000-0000-0000-000000000000' },
        { ...other, claimId: c.status?.sandbox?.claimID ?? '' },
      )
      .catch((e: unknown) => e);
    expect((replaced as Error).name).toBe('ClaimOwnerMismatchError');
    const after = await getClaim(kc, ns, 'r-bound');
    expect(after.status?.sandbox).toEqual(c.status?.sandbox);
    expect((await core().readNamespacedSecret({ namespace: ns, name: secretName })).data?.token).toBe(tokenBefore);
  });

  it('never takes over a Secret of the token name that the claim does not control', async () => {
    await createClaim(kc, ns, 'r-secret', 'not-a-pool');
    const c = await getClaim(kc, ns, 'r-secret');
    const foreign = Buffer.from('someone-elses-data').toString('base64');
    await core().createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: 'r-secret-sandbox-token' }, data: { token: foreign } },
    });
    const a = { claimId: 'sb_00000000000000bb', node: 'n', address: '127.0.0.1:1', token: 'delivered-token' };
    const err: unknown = await recorder()
      .recordBound({ namespace: ns, name: 'r-secret', uid: c.metadata.uid ?? '' }, a)
      .catch((e: unknown) => e);
    expect((err as Error).name).toBe('SecretNotOwnedError');
    const s = await core().readNamespacedSecret({ namespace: ns, name: 'r-secret-sandbox-token' });
    expect(s.data?.token).toBe(foreign);
    expect(s.metadata?.ownerReferences ?? []).toEqual([]);
    expect((await getClaim(kc, ns, 'r-secret')).status?.sandbox?.claimID).toBeUndefined();
  });

  it('gives the longest claim name a valid, hash-shortened token Secret', async () => {
    const name = `long-${'x'.repeat(248)}`;
    await createClaim(kc, ns, name, 'base');
    const c = await waitBound(name);
    const secretName = c.status?.sandbox?.tokenSecretName ?? '';
    expect(secretName.length).toBeLessThanOrEqual(253);
    expect(secretName.endsWith('-sandbox-token')).toBe(true);
    const s = await core().readNamespacedSecret({ namespace: ns, name: secretName });
    expect(s.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'SandboxClaim', uid: c.metadata.uid });
  });

  it('a fast-path record finds a claim of its name it did not create: nothing is written', async () => {
    await createClaim(kc, ns, 'r-taken', 'not-a-pool');
    const before = await getClaim(kc, ns, 'r-taken');
    const fast = new FastPathRecorder(identity.kubeConfig, recorder());
    const a = { claimId: 'sb_00000000000000cc', node: 'n', address: '127.0.0.1:1', token: 'fast-token' };
    const err: unknown = await fast
      .recordBound({ namespace: ns, name: 'r-taken', warmPool: 'base', deliveryUid: '11111111-2222-3333-4444-555555555555' }, a)
      .catch((e: unknown) => e);
    expect((err as Error).name).toBe('ClaimOwnerMismatchError');
    const after = await getClaim(kc, ns, 'r-taken');
    expect(after.status?.sandbox).toBeUndefined();
    expect(after.metadata.annotations).toEqual(before.metadata.annotations);
    await expect(core().readNamespacedSecret({ namespace: ns, name: 'r-taken-sandbox-token' })).rejects.toMatchObject({ code: 404 });
  });

  it('the orphan pass creates the missing SandboxClaim of a fast-path delivery whose record was never written', async () => {
    const deliveryUid = '99999999-8888-7777-6666-555555555555';
    const a = await cc.gateway.deliver({ namespace: ns, name: 'fast-lost', owner: { kind: 'FastPathClaim', uid: deliveryUid }, key });
    await expect(getClaim(kc, ns, 'fast-lost')).rejects.toMatchObject({ code: 404 });
    const pass = await cc.orphans.reconcileAll();
    expect(pass.adopted).toBeGreaterThanOrEqual(1);
    const c = await waitBound('fast-lost');
    expect(c.status?.sandbox?.claimID).toBe(a.claimId);
    expect(c.metadata.annotations?.['sandbox.cocoonstack.io/delivery-uid']).toBe(deliveryUid);
    expect(c.spec.warmPoolRef.name).toBe('base');
    const s = await core().readNamespacedSecret({ namespace: ns, name: c.status?.sandbox?.tokenSecretName ?? '' });
    expect(Buffer.from(s.data?.token ?? '', 'base64').toString()).toBe(a.token);
  });
});
