import { randomBytes } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  applyCrds,
  createTestNamespace,
  deleteNamespace,
  eventually,
  installChartAppRbac,
  runSuffix,
  startControlPlane,
  type ControlPlane,
  type ChartAppIdentity,
} from '@sandbox-scale/e2e';
import { createLogger } from '@sandbox-scale/kube-runtime';
import { SandboxdClient } from '@sandbox-scale/sandboxd-client';
import { startSim, type Sim } from '@sandbox-scale/sandboxd-sim';
import type { SandboxClaim } from '@sandbox-scale/scale-core';
import { startClaimController, type ClaimControllerHandle } from '../src';
import {
  boundCondition,
  createClaim,
  createPool,
  deleteInventories,
  eventsOf,
  getClaim,
  publishInventories,
  ROOT_TOKEN,
  waitForBound,
  waitForWarmPools,
} from './fixtures';
import { OwnerRefKey } from '@sandbox-scale/scale-core';

/** The key every process of this test proves claim references with. */
const CLAIM_REF_KEY = new OwnerRefKey(randomBytes(32));

/**
 * A sandbox that vanishes from its node (reaped, node restarted, released on the node) shows in
 * the node's next NodeInventory; the claim says SandboxLost from that, not only at its next lease
 * renewal (minutes away with a 15 min lease).
 */
const suffix = runSuffix();
const IMAGE = `registry.local/cc-inv-${suffix}:1`;
const SANDBOX_READ = 'GET /v1/sandboxes/:id';
let cp: ControlPlane;
let kc: KubeConfig;
let ns: string;
let sim: Sim;
let cc: ClaimControllerHandle;
let identity: ChartAppIdentity;

beforeAll(async () => {
  // A control plane of its own: this controller runs as the chart does, unscoped, so on the shared
  // one it would also reconcile the claims, and read the NodeInventories, of the suites beside it.
  cp = await startControlPlane();
  kc = cp.kubeConfig;
  await applyCrds(kc, 'charts/sandbox-scale/crds');
  ns = await createTestNamespace(kc, 'claiminv');
  sim = await startSim({ nodes: 2, speed: 0.01, token: ROOT_TOKEN, pools: [{ template: IMAGE, warm: 2 }] });
  await waitForWarmPools(sim, ROOT_TOKEN, IMAGE, 2);
  await publishInventories(kc, sim, suffix, { entries: {} });
  await createPool(kc, ns, 'base', IMAGE);
  identity = await installChartAppRbac(kc, 'claim-controller', { release: `cci-${suffix}`, namespace: ns });
  cc = await startClaimController({
    claimRefKey: CLAIM_REF_KEY,
    kubeConfig: identity.kubeConfig,
    fleetToken: ROOT_TOKEN,
    // the chart's default lease: its renewal is 6-9 minutes away, far past this test
    flags: {
      metricsBindAddress: '0',
      healthProbeBindAddress: '0',
      fastPathBindAddress: '0',
      orphanInterval: 3_600_000,
      sandboxLeaseTtl: 900_000,
    },
    log: createLogger({ name: 'claim-controller-inventory-test', level: 'warn' }),
  });
});

afterAll(async () => {
  await cc?.stop();
  await identity?.remove();
  await deleteInventories(kc, sim, suffix);
  await sim?.stop();
  await deleteNamespace(kc, ns);
  await cp?.stop();
});

function nodeOf(c: SandboxClaim) {
  const node = sim.nodes.find((n) => c.status?.sandbox?.nodeName === `${n.name}-${suffix}`);
  if (!node) throw new Error(`claim bound to an unknown node: ${JSON.stringify(c.status?.sandbox)}`);
  return node;
}

const sandboxReads = (): number => sim.nodes.reduce((sum, n) => sum + (sim.node(n.name).state.metrics.requests.get(SANDBOX_READ) ?? 0), 0);

describe('a Bound claim its node inventory no longer lists', () => {
  it('stays Bound when an inventory only lags the node, and turns SandboxLost within a publish once the node lost the sandbox', async () => {
    await createClaim(kc, ns, 'kept', 'base');
    const kept = await waitForBound(kc, ns, 'kept', 30_000);
    const keptId = kept.status?.sandbox?.claimID ?? '';
    expect(keptId).toMatch(/^sb_/);

    // a published snapshot that does not list a sandbox the node still has (one taken before the
    // bind): the node is asked, answers 200, and the claim stays Bound
    await publishInventories(kc, sim, suffix, { entries: {} });
    const readsBefore = sandboxReads();
    await publishInventories(kc, sim, suffix, { entries: { without: [keptId] } });
    await eventually(async () => {
      if (sandboxReads() <= readsBefore) throw new Error('the node was not asked for the sandbox yet');
    });
    await publishInventories(kc, sim, suffix, { entries: {} });

    await createClaim(kc, ns, 'lost', 'base');
    const lost = await waitForBound(kc, ns, 'lost', 30_000);
    const lostId = lost.status?.sandbox?.claimID ?? '';
    // the publisher's round after the bind lists it; then the node loses it
    await publishInventories(kc, sim, suffix, { entries: {} });
    await new SandboxdClient({ baseUrl: nodeOf(lost).url, token: ROOT_TOKEN }).release(lostId);

    // the publisher's next rounds: the node's inventory no longer lists the sandbox
    const after = await eventually(
      async () => {
        await publishInventories(kc, sim, suffix, { entries: {} });
        const c = await getClaim(kc, ns, 'lost');
        if (boundCondition(c)?.reason !== 'SandboxLost') throw new Error(`not lost yet: ${JSON.stringify(c.status?.conditions)}`);
        return c;
      },
      { timeoutMs: 30_000 },
    );
    expect(boundCondition(after)?.status).toBe('False');
    expect(boundCondition(after)?.message).toContain(lostId);
    expect(after.status?.conditions?.find((k) => k.type === 'Ready')).toMatchObject({ status: 'False', reason: 'SandboxLost' });
    expect(after.status?.conditions?.find((k) => k.type === 'Finished')).toMatchObject({ status: 'True', reason: 'SandboxLost' });
    const events = await eventually(async () => {
      const evs = await eventsOf(ns, 'lost', cp.kubeconfigPath);
      if (!evs.some((e) => e.reason === 'SandboxLost')) throw new Error('no SandboxLost event yet');
      return evs;
    });
    expect(events.find((e) => e.reason === 'SandboxLost')?.note).toContain(lostId);

    // the claim whose sandbox the node still has was never marked lost
    const keptNow = await getClaim(kc, ns, 'kept');
    expect(boundCondition(keptNow)).toMatchObject({ status: 'True', reason: 'NodeLocalClaim' });
  });
});
