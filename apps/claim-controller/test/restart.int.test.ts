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
import { startSim, type Sim } from '@sandbox-scale/sandboxd-sim';
import { startClaimController, type ClaimControllerHandle } from '../src';
import {
  boundCondition,
  createClaim,
  createPool,
  deleteInventories,
  deliveryOf,
  getClaim,
  kubeconfigWithoutStatusWrites,
  leaderArgs,
  liveDeliveries,
  newerThanLeadership,
  publishInventories,
  releases,
  selectorOf,
  spawnClaimController,
  waitForBound,
  waitForDeliveries,
  waitForWarmPools,
} from './fixtures';
import { OwnerRefKey } from '@sandbox-scale/scale-core';

/** The key every process of this test proves claim references with. */
const CLAIM_REF_KEY_TEXT = randomBytes(32).toString('base64');
const CLAIM_REF_KEY = OwnerRefKey.fromText(CLAIM_REF_KEY_TEXT);

const suffix = runSuffix();
const IMAGE = `registry.local/cc-restart-${suffix}:1`;
const CLAIMS = ['r-0', 'r-1', 'r-2', 'r-3', 'r-4'];
/**
 * This suite's own fleet token, claims and nodes. Other suites share the control plane: their
 * controllers see this node's inventory but cannot claim on it, and the restarted controller
 * sees only this suite's claims and node (so no other suite's node, with another token, holds
 * up its look for earlier deliveries).
 */
const TOKEN = `restart-fleet-token-${suffix}`;
const LABELS = { 'test.sandbox-scale/suite': `restart-${suffix}` };
let kc: KubeConfig;
let ns: string;
let sim: Sim;
let child: ChildProcess | undefined;
let cc: ClaimControllerHandle | undefined;
let identity: ChartAppIdentity | undefined;
let limited: { file: string; remove(): Promise<void> } | undefined;

beforeAll(async () => {
  kc = testKubeConfig();
  await applyCrds(kc, 'charts/sandbox-scale/crds');
  ns = await createTestNamespace(kc, 'claimrestart');
  sim = await startSim({ nodes: 1, speed: 0, token: TOKEN, pools: [{ template: IMAGE, warm: 8 }] });
  await waitForWarmPools(sim, TOKEN, IMAGE, 8);
  await publishInventories(kc, sim, suffix, { token: TOKEN, labels: LABELS });
  await createPool(kc, ns, 'base', IMAGE);
});

afterAll(async () => {
  child?.kill('SIGKILL');
  await cc?.stop();
  await identity?.remove();
  await deleteInventories(kc, sim, suffix);
  await sim?.stop();
  await limited?.remove();
  await deleteNamespace(kc, ns);
});

it('binds every delivery after a SIGKILL between delivery and record, claiming nothing twice and releasing nothing', async () => {
  limited = await kubeconfigWithoutStatusWrites(kc, ns, `claim-controller-no-status-${suffix}`);
  const spawned = spawnClaimController(limited.file, [...leaderArgs(ns), '--orphan-interval', '1h'], TOKEN, CLAIM_REF_KEY_TEXT);
  child = spawned.child;
  const exited = spawned.exited;
  // created once the process leads: it claims them without looking for earlier deliveries on other suites' nodes
  await newerThanLeadership(kc, ns);
  for (const name of CLAIMS) await createClaim(kc, ns, name, 'base', { labels: LABELS });
  await waitForDeliveries(sim, ns, TOKEN, CLAIMS.length);
  for (const name of CLAIMS) expect(boundCondition(await getClaim(kc, ns, name))?.status).not.toBe('True');
  child.kill('SIGKILL');
  await exited;
  const delivered = await liveDeliveries(sim, ns, TOKEN);
  expect(delivered).toHaveLength(CLAIMS.length);

  // the restarted controller runs as deployed: the chart's ServiceAccount and RBAC
  identity = await installChartAppRbac(kc, 'claim-controller', { release: `ccr-${suffix}`, namespace: ns });
  cc = await startClaimController({
    claimRefKey: CLAIM_REF_KEY,
    kubeConfig: identity.kubeConfig,
    fleetToken: TOKEN,
    claimSelector: selectorOf(LABELS),
    inventorySelector: selectorOf(LABELS),
    flags: { metricsBindAddress: '0', healthProbeBindAddress: '0', fastPathBindAddress: '0', orphanInterval: 1000 },
    log: createLogger({ name: 'claim-controller-restart', level: 'warn' }),
  });
  for (const name of CLAIMS) {
    const c = await waitForBound(kc, ns, name, 30_000);
    const mine = deliveryOf(delivered, name, c.metadata.uid);
    expect(c.status?.sandbox?.claimID).toBe(mine?.id);
  }
  expect(await liveDeliveries(sim, ns, TOKEN)).toHaveLength(CLAIMS.length);
  expect(releases(sim)).toBe(0);
});
