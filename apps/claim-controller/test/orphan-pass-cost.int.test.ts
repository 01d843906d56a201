import { randomBytes } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  applyCrds,
  countingKubeConfig,
  createTestNamespace,
  deleteNamespace,
  eventually,
  installChartAppRbac,
  runSuffix,
  testKubeConfig,
  type ChartAppIdentity,
  type KubeRequestCount,
} from '@sandbox-scale/e2e';
import { createLogger } from '@sandbox-scale/kube-runtime';
import { SandboxdClient, SandboxdClientSet } from '@sandbox-scale/sandboxd-client';
import { startSim, type Sim } from '@sandbox-scale/sandboxd-sim';
import { formatOwnerRef, poolKeyFor, OwnerRefKey } from '@sandbox-scale/scale-core';
import { Registry } from 'prom-client';
import { ClaimClient } from '../src/record/claim-client';
import type { OrphanOutcome, OrphanReconciler } from '../src/controllers/orphan-reconciler';
import { ClaimGateway } from '../src/gateway/claim-gateway';
import { ClaimRecorder } from '../src/record/claim-recorder';
import { FastPathRecorder } from '../src/record/fast-path-recorder';
import { SecretAccess, selfSubjectReviewer } from '../src/record/secret-access';
import { createCaches, createOrphanPass, type Caches } from '../src/wiring';
import {
  boundCondition,
  countingProxies,
  createClaim,
  createPool,
  deleteInventories,
  getClaim,
  publishInventories,
  type CountingProxies,
} from './fixtures';

/** The key every process of this test proves claim references with. */
const CLAIM_REF_KEY = new OwnerRefKey(randomBytes(32));

/**
 * What one orphan pass costs, counted where the requests land: at a proxy in front of each
 * simulated node (this suite's fleet token only: other suites' controllers share the control
 * plane and ask these nodes too, with theirs) and every request made with the pass's kubeconfig
 * (the chart's ServiceAccount). Goal: at most one request per node plus one per change.
 */
const suffix = runSuffix();
const IMAGE = `registry.local/orphan-cost-${suffix}:1`;
const NODES = 3;
const TOKEN = `orphan-cost-fleet-token-${suffix}`;
const BOUND = 12;
let kc: KubeConfig;
let ns: string;
let sim: Sim;
let identity: ChartAppIdentity;
let counted: KubeRequestCount;
let caches: Caches;
let pass: OrphanReconciler;
let clients: SandboxdClientSet;
let proxies: CountingProxies;
const outcomes: OrphanOutcome[] = [];

/** GET /v1/sandboxes and GET /v1/sandboxes/:id this suite asked the nodes so far. */
function nodeReads(): { lists: number; details: number } {
  return { lists: proxies.count('GET /v1/sandboxes'), details: proxies.count('GET /v1/sandboxes/:id') };
}

async function measuredPass(): Promise<{
  adopted: number;
  errors: number;
  apiserver: Map<string, number>;
  lists: number;
  details: number;
}> {
  const before = nodeReads();
  counted.reset();
  outcomes.length = 0;
  const r = await pass.reconcileAll();
  const after = nodeReads();
  return { ...r, apiserver: counted.byRoute(), lists: after.lists - before.lists, details: after.details - before.details };
}

const sum = (m: Map<string, number>, method?: string): number =>
  [...m].filter(([k]) => method === undefined || k.startsWith(`${method} `)).reduce((a, [, n]) => a + n, 0);

beforeAll(async () => {
  kc = testKubeConfig();
  await applyCrds(kc, 'charts/sandbox-scale/crds');
  ns = await createTestNamespace(kc, 'orphancost');
  sim = await startSim({ nodes: NODES, speed: 0, token: TOKEN, pools: [{ template: IMAGE, warm: 20 }] });
  proxies = await countingProxies(sim, TOKEN);
  await publishInventories(kc, sim, suffix, { token: TOKEN, addressOf: (node) => proxies.addressOf(node) });
  await createPool(kc, ns, 'base', IMAGE);
  identity = await installChartAppRbac(kc, 'claim-controller', { release: `oc-${suffix}`, namespace: ns });
  counted = countingKubeConfig(identity.kubeConfig);
  const log = createLogger({ name: 'orphan-cost-test', level: 'warn' });
  caches = createCaches(counted.kubeConfig, log, new Registry());
  for (const c of Object.values(caches)) c.start();
  await Promise.all(Object.values(caches).map((c) => c.waitForSync()));
  clients = new SandboxdClientSet({ token: TOKEN });
  // this run's nodes only: the shared control plane holds other suites' inventories too
  const inventories = (): ReturnType<typeof caches.inventories.list> =>
    caches.inventories.list().filter((i) => i.node.endsWith(`-${suffix}`));
  const gateway = new ClaimGateway({ refKey: CLAIM_REF_KEY, clients, fleetToken: TOKEN, inventories, log });
  const recorder = new ClaimRecorder({ kubeConfig: counted.kubeConfig });
  const writes = new ClaimClient(counted.kubeConfig);
  const fastPath = new FastPathRecorder(counted.kubeConfig, recorder);
  const onItem = (o: OrphanOutcome): number => outcomes.push(o);
  const secretAccess = new SecretAccess({ review: selfSubjectReviewer(counted.kubeConfig) });
  pass = createOrphanPass(caches, {
    gateway,
    recorder,
    fastPath,
    inventories,
    claims: writes,
    refKey: CLAIM_REF_KEY,
    secretAccess,
    intervalMs: 3_600_000,
    log,
    onItem,
  });

  // The steady fleet: claims Bound to their deliveries, and deliveries of owners that have no SandboxClaim.
  const admin = new ClaimRecorder({ kubeConfig: kc });
  for (let i = 0; i < BOUND; i++) {
    const name = `bound-${i}`;
    await createClaim(kc, ns, name, 'not-a-pool');
    const c = await getClaim(kc, ns, name);
    const n = sim.nodes[i % NODES];
    const d = await new SandboxdClient({ baseUrl: n?.url ?? '', token: TOKEN }).claim({
      template: IMAGE,
      ttlSeconds: 3600,
      claimRef: formatOwnerRef({ kind: 'SandboxClaim', uid: c.metadata.uid ?? '', namespace: ns, name }, CLAIM_REF_KEY),
    });
    // other suites' controllers may write a condition on the claim meanwhile (its pool does not exist): a conflict is tried again
    await eventually(() =>
      admin.recordBound(
        { namespace: ns, name, uid: c.metadata.uid ?? '' },
        { claimId: d.id, node: `${n?.name}-${suffix}`, address: d.ownerAddr, token: d.token },
      ),
    );
  }
  for (const [i, kind] of (['Sandbox', 'Sandbox', 'ForkChild', 'SnapshotClaim'] as const).entries()) {
    const n = sim.nodes[i % NODES];
    await new SandboxdClient({ baseUrl: n?.url ?? '', token: TOKEN }).claim({
      template: IMAGE,
      ttlSeconds: 3600,
      claimRef: formatOwnerRef({ kind, uid: `1111111${i}-2222-3333-4444-555555555555`, namespace: ns, name: `other-${i}` }, CLAIM_REF_KEY),
    });
  }
  await new SandboxdClient({ baseUrl: sim.nodes[0]?.url ?? '', token: TOKEN }).claim({
    template: IMAGE,
    ttlSeconds: 3600,
    claimRef: `${ns}/legacy`,
  });
  await eventually(async () => {
    const cached = caches.claims.list(ns).filter((c) => boundCondition(c)?.status === 'True');
    if (cached.length !== BOUND) throw new Error(`cache holds ${cached.length} Bound claims`);
  });
});

afterAll(async () => {
  await Promise.all(Object.values(caches ?? {}).map((c) => c.stop()));
  await clients?.close();
  await identity?.remove();
  await deleteInventories(kc, sim, suffix);
  await proxies?.close();
  await sim?.stop();
  await deleteNamespace(kc, ns);
});

describe('orphan pass cost', () => {
  it('a steady pass costs one node list per node and no apiserver request', async () => {
    const r = await measuredPass();
    console.log(
      `steady pass: ${NODES} nodes, ${BOUND} Bound + 5 foreign deliveries: apiserver ${sum(r.apiserver)}, sandboxd lists ${r.lists}, token reads ${r.details}`,
    );
    expect(r).toMatchObject({ adopted: 0, errors: 0, lists: NODES, details: 0 });
    expect(sum(r.apiserver)).toBe(0);
    expect(outcomes.filter((o) => o === 'bound')).toHaveLength(BOUND);
    expect(outcomes.filter((o) => o === 'foreign')).toHaveLength(5);
  });

  it('a pass with changes costs one node list per node plus one Get and one token read per change', async () => {
    // two claims delivered behind the controller's back, and a fast-path delivery whose claim was never written
    const changes: string[] = [];
    for (const name of ['lost-0', 'lost-1']) {
      await createClaim(kc, ns, name, 'not-a-pool');
      const c = await getClaim(kc, ns, name);
      await new SandboxdClient({ baseUrl: sim.nodes[1]?.url ?? '', token: TOKEN }).claim({
        template: IMAGE,
        ttlSeconds: 3600,
        claimRef: formatOwnerRef({ kind: 'SandboxClaim', uid: c.metadata.uid ?? '', namespace: ns, name }, CLAIM_REF_KEY),
      });
      changes.push(name);
    }
    const gateway = new ClaimGateway({
      refKey: CLAIM_REF_KEY,
      clients,
      fleetToken: TOKEN,
      inventories: () => caches.inventories.list().filter((i) => i.node.endsWith(`-${suffix}`)),
      log: createLogger({ name: 't', level: 'silent' }),
    });
    await gateway.deliver({
      namespace: ns,
      name: 'fast-lost',
      owner: { kind: 'FastPathClaim', uid: '99999999-8888-7777-6666-55555555aaaa' },
      key: poolKeyFor([{ image: IMAGE }], undefined),
      ttlSeconds: 3600,
    });
    changes.push('fast-lost');
    await eventually(async () => {
      if (!caches.claims.get(ns, 'lost-0') || !caches.claims.get(ns, 'lost-1')) throw new Error('cache has not seen the new claims yet');
    });
    const r = await measuredPass();
    const sandboxd = r.lists + r.details;
    const gets = sum(r.apiserver, 'GET');
    const writes = sum(r.apiserver) - gets;
    console.log(
      `pass with ${changes.length} changes: sandboxd ${sandboxd} (lists ${r.lists}, token reads ${r.details}); apiserver ${sum(r.apiserver)} (reads ${gets}, record writes ${writes}) ${JSON.stringify(Object.fromEntries(r.apiserver))}`,
    );
    expect(r).toMatchObject({ adopted: changes.length, errors: 0, lists: NODES, details: changes.length });
    expect(sandboxd).toBeLessThanOrEqual(NODES + changes.length);
    // reads: the confirming Get of each claim that existed; the fast-path claim is created, not read
    expect(gets).toBe(2);
    expect(gets).toBeLessThanOrEqual(changes.length);
    // writes are the records themselves: a Secret and a status per change, plus the created fast-path claim,
    // and the two access reviews (create, patch on secrets) of the namespace, asked once and cached
    expect(writes).toBe(2 * changes.length + 1 + 2);
    for (const name of changes) expect(boundCondition(await getClaim(kc, ns, name))?.status).toBe('True');

    // once the cache has seen the records, the next pass is steady again
    await eventually(async () => {
      for (const name of changes) {
        const c = caches.claims.get(ns, name);
        if (!c || boundCondition(c)?.status !== 'True') throw new Error(`${name} not Bound in the cache yet`);
      }
    });
    const again = await measuredPass();
    expect(again).toMatchObject({ adopted: 0, errors: 0, lists: NODES, details: 0 });
    expect(sum(again.apiserver)).toBe(0);
  });
});
