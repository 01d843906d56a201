import { randomBytes } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  applyCrds,
  createTestNamespace,
  deleteNamespace,
  installChartAppRbac,
  runSuffix,
  testKubeConfig,
  type ChartAppIdentity,
} from '@sandbox-scale/e2e';
import { createLogger } from '@sandbox-scale/kube-runtime';
import { ANNOTATIONS, type SandboxClaim, OwnerRefKey } from '@sandbox-scale/scale-core';
import { startSim, type Sim } from '@sandbox-scale/sandboxd-sim';
import { startClaimController, type ClaimControllerHandle } from '../src';
import {
  boundCondition,
  countingProxies,
  createClaim,
  createPool,
  deleteInventories,
  deliveryOf,
  getClaim,
  kubeconfigWithoutStatusWrites,
  LEADER_FLAGS,
  leaderArgs,
  leaseHolder,
  liveDeliveries,
  newerThanLeadership,
  publishInventories,
  releases,
  selectorOf,
  spawnClaimController,
  waitForBound,
  waitForDeliveries,
  waitForWarmPools,
  type CountingProxies,
} from './fixtures';

/** The key every process of this test proves claim references with. */
const CLAIM_REF_KEY_TEXT = randomBytes(32).toString('base64');
const CLAIM_REF_KEY = OwnerRefKey.fromText(CLAIM_REF_KEY_TEXT);

/**
 * Two replicas behind the leader Lease. The leader delivers a burst of claims but cannot record
 * them (its RBAC has no status write), so every delivery is in the window a crash leaves open;
 * then it is SIGKILLed and the standby (the chart's ServiceAccount) takes over. What the new
 * leader asks the nodes to find the earlier deliveries is counted where it lands: at a proxy in
 * front of each simulated node, counting this suite's token only.
 */
const suffix = runSuffix();
const IMAGE = `registry.local/cc-failover-${suffix}:1`;
const NODES = 4;
const DELIVERED = Array.from({ length: 12 }, (_, i) => `d-${i}`);
/** Claims older than the new leadership that no node holds: their pool appears only after the failover. */
const WAITING = ['w-0', 'w-1', 'w-2'];
const LIST = 'GET /v1/sandboxes';
const TOKEN_READ = 'GET /v1/sandboxes/:id';
const CLAIM = 'POST /v1/claim';
/**
 * This suite's own fleet token, claims and nodes. Other suites share the control plane: their
 * controllers see these nodes' inventories but cannot claim on them (nor are they counted), and
 * the standby sees only this suite's claims and nodes.
 */
const TOKEN = `failover-fleet-token-${suffix}`;
const LABELS = { 'test.sandbox-scale/suite': `failover-${suffix}` };

let kc: KubeConfig;
let ns: string;
let sim: Sim;
let child: ChildProcess | undefined;
let standby: ClaimControllerHandle | undefined;
let identity: ChartAppIdentity | undefined;
let limited: { file: string; remove(): Promise<void> } | undefined;
let proxies: CountingProxies | undefined;

function countsOf(routes: readonly string[]): Record<string, number> {
  return Object.fromEntries(routes.map((r) => [r, proxies?.count(r) ?? 0]));
}

beforeAll(async () => {
  kc = testKubeConfig();
  await applyCrds(kc, 'charts/sandbox-scale/crds');
  ns = await createTestNamespace(kc, 'claimfailover');
  sim = await startSim({ nodes: NODES, speed: 0, token: TOKEN, pools: [{ template: IMAGE, warm: 6 }] });
  await waitForWarmPools(sim, TOKEN, IMAGE, 6);
  // the nodes are published behind counting proxies: what this suite's controllers ask them is counted there
  proxies = await countingProxies(sim, TOKEN);
  await publishInventories(kc, sim, suffix, { token: TOKEN, labels: LABELS, addressOf: (node) => proxies?.addressOf(node) });
  await createPool(kc, ns, 'base', IMAGE);
});

afterAll(async () => {
  child?.kill('SIGKILL');
  await standby?.stop();
  await identity?.remove();
  await deleteInventories(kc, sim, suffix);
  await proxies?.close();
  await sim?.stop();
  await limited?.remove();
  await deleteNamespace(kc, ns);
});

it('after the leader is killed mid-burst, the new leader finds every earlier delivery with one list per node, claims nothing twice and releases nothing', async () => {
  limited = await kubeconfigWithoutStatusWrites(kc, ns, `claim-controller-failover-${suffix}`);
  const spawned = spawnClaimController(limited.file, [...leaderArgs(ns), '--orphan-interval', '1h'], TOKEN, CLAIM_REF_KEY_TEXT);
  child = spawned.child;
  // created once the process leads: it claims them without looking for earlier deliveries on other suites' nodes
  const oldLeader = await newerThanLeadership(kc, ns);
  for (const name of DELIVERED) await createClaim(kc, ns, name, 'base', { labels: LABELS });
  for (const name of WAITING) await createClaim(kc, ns, name, 'later', { labels: LABELS });
  await waitForDeliveries(sim, ns, TOKEN, DELIVERED.length);

  // the standby runs as deployed: the chart's ServiceAccount and RBAC, waiting on the same Lease
  identity = await installChartAppRbac(kc, 'claim-controller', { release: `ccf-${suffix}`, namespace: ns });
  standby = await startClaimController({
    claimRefKey: CLAIM_REF_KEY,
    kubeConfig: identity.kubeConfig,
    fleetToken: TOKEN,
    claimSelector: selectorOf(LABELS),
    inventorySelector: selectorOf(LABELS),
    flags: {
      ...LEADER_FLAGS,
      leaderElectionNamespace: ns,
      metricsBindAddress: '0',
      healthProbeBindAddress: '0',
      fastPathBindAddress: '0',
      orphanInterval: 3_600_000,
    },
    log: createLogger({ name: 'claim-controller-standby', level: 'warn' }),
    // one window for the whole test, so the count does not depend on how fast the claims heal
    earlierListingMaxAgeMs: 600_000,
  });

  const delivered = await liveDeliveries(sim, ns, TOKEN);
  expect(delivered).toHaveLength(DELIVERED.length);
  for (const name of DELIVERED) expect(boundCondition(await getClaim(kc, ns, name))?.status).not.toBe('True');
  const before = countsOf([LIST, TOKEN_READ, CLAIM]);
  child.kill('SIGKILL');
  await spawned.exited;

  await leaseHolder(kc, ns, oldLeader);
  await createPool(kc, ns, 'later', IMAGE);
  const claimed = new Map<string, SandboxClaim>();
  for (const name of [...DELIVERED, ...WAITING]) {
    claimed.set(name, await waitForBound(kc, ns, name, 60_000));
  }
  const after = countsOf([LIST, TOKEN_READ, CLAIM]);
  const lists = (after[LIST] ?? 0) - (before[LIST] ?? 0);
  const tokenReads = (after[TOKEN_READ] ?? 0) - (before[TOKEN_READ] ?? 0);
  const claims = (after[CLAIM] ?? 0) - (before[CLAIM] ?? 0);
  console.log(
    `failover: ${DELIVERED.length} delivered-unrecorded + ${WAITING.length} waiting claims over ${NODES} nodes: node lists ${lists} (per-claim checks would be ≥ ${(DELIVERED.length + WAITING.length) * NODES}), token reads ${tokenReads}, claims ${claims}`,
  );
  for (const [name, c] of claimed) {
    const mine = deliveryOf(delivered, name, c.metadata.uid);
    if (DELIVERED.includes(name)) {
      // the delivery the old leader made, adopted; the hint it wrote with the finalizer names a node of the fleet
      expect(c.status?.sandbox?.claimID).toBe(mine?.id);
      expect(sim.nodes.map((n) => `${n.name}-${suffix}`)).toContain(c.metadata.annotations?.[ANNOTATIONS.deliveryNode]);
    } else {
      expect(mine).toBeUndefined();
    }
  }
  // one orphan pass at the start of the leadership (one list per node), and one listing per node that answers every older claim
  expect(lists).toBeLessThanOrEqual(2 * NODES);
  expect(lists).toBeLessThan((DELIVERED.length + WAITING.length) * NODES);
  // each adopted delivery's token is read back once by the claim and at most once more by the orphan pass
  expect(tokenReads).toBeGreaterThanOrEqual(DELIVERED.length);
  expect(tokenReads).toBeLessThanOrEqual(2 * DELIVERED.length);
  // only the claims no node held were claimed; nothing twice, nothing released
  expect(claims).toBe(WAITING.length);
  expect(new Set([...claimed.values()].map((c) => c.status?.sandbox?.claimID)).size).toBe(DELIVERED.length + WAITING.length);
  expect(await liveDeliveries(sim, ns, TOKEN)).toHaveLength(DELIVERED.length + WAITING.length);
  expect(releases(sim)).toBe(0);
});
