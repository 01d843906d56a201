import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RbacAuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { applyCrds, createTestNamespace, deleteNamespace, eventually, installChartAppRbac, kubeconfigForServiceAccount, kubeconfigText, runSuffix, testKubeConfig, type ChartAppIdentity } from '@sandbox-scale/e2e';
import { createLogger } from '@sandbox-scale/kube-runtime';
import { SandboxdClient } from '@sandbox-scale/sandboxd-client';
import { parseOwnerRef } from '@sandbox-scale/scale-core';
import { startSim, type Sim } from '@sandbox-scale/sandboxd-sim';
import { startClaimController, type ClaimControllerHandle } from '../src';
import { boundCondition, createClaim, createPool, deleteInventories, getClaim, liveDeliveries, publishInventories, releases, ROOT_TOKEN } from './fixtures';

const suffix = runSuffix();
const IMAGE = `registry.local/cc-restart-${suffix}:1`;
const CLAIMS = ['r-0', 'r-1', 'r-2', 'r-3', 'r-4'];
let kc: KubeConfig;
let ns: string;
let sim: Sim;
let child: ChildProcess | undefined;
let cc: ClaimControllerHandle | undefined;
let identity: ChartAppIdentity | undefined;
const rbacName = `claim-controller-no-status-${suffix}`;

/**
 * A service account that can do everything the controller does except write claim status: its
 * deliveries happen, their Bound records cannot land — the window a crash leaves open.
 */
async function kubeconfigWithoutStatusWrites(): Promise<string> {
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createClusterRole({
    body: {
      metadata: { name: rbacName },
      rules: [
        { apiGroups: ['extensions.agents.x-k8s.io'], resources: ['sandboxclaims', 'sandboxwarmpools', 'sandboxtemplates', 'nodeinventories'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: ['extensions.agents.x-k8s.io'], resources: ['sandboxclaims'], verbs: ['patch', 'update'] },
        { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'create', 'patch'] },
        { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
      ],
    },
  });
  await rbac.createClusterRoleBinding({
    body: { metadata: { name: rbacName }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: rbacName }, subjects: [{ kind: 'ServiceAccount', name: 'limited', namespace: ns }] },
  });
  const sa = await kubeconfigForServiceAccount(kc, ns, 'limited');
  const file = join(mkdtempSync(join(tmpdir(), 'cc-restart-')), 'kubeconfig');
  writeFileSync(file, kubeconfigText(sa));
  return file;
}

beforeAll(async () => {
  kc = testKubeConfig();
  await applyCrds(kc, 'charts/sandbox-scale/crds');
  ns = await createTestNamespace(kc, 'claimrestart');
  sim = await startSim({ nodes: 1, speed: 0, token: ROOT_TOKEN, pools: [{ template: IMAGE, warm: 8 }] });
  await eventually(async () => {
    const info = await new SandboxdClient({ baseUrl: sim.nodes[0]?.url ?? '', token: ROOT_TOKEN }).info();
    if ((info.pools[0]?.warm ?? 0) < 8) throw new Error('pool not warm yet');
  });
  await publishInventories(kc, sim, suffix);
  await createPool(kc, ns, 'base', IMAGE);
});

afterAll(async () => {
  child?.kill('SIGKILL');
  await cc?.stop();
  await identity?.remove();
  await deleteInventories(kc, sim, suffix);
  await sim?.stop();
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  await rbac.deleteClusterRoleBinding({ name: rbacName }).catch(() => undefined);
  await rbac.deleteClusterRole({ name: rbacName }).catch(() => undefined);
  await deleteNamespace(kc, ns);
});

it('binds every delivery after a SIGKILL between delivery and record, claiming nothing twice and releasing nothing', async () => {
  const kubeconfig = await kubeconfigWithoutStatusWrites();
  const tokenFile = join(mkdtempSync(join(tmpdir(), 'cc-token-')), 'token');
  writeFileSync(tokenFile, `${ROOT_TOKEN}\n`);
  for (const name of CLAIMS) await createClaim(kc, ns, name, 'base');

  child = spawn(
    process.execPath,
    ['--import', 'tsx', 'apps/claim-controller/src/main.ts', '--kubeconfig', kubeconfig, '--fleet-token-file', tokenFile, '--metrics-bind-address', '0', '--health-probe-bind-address', '0', '--fast-path-bind-address', '0', '--orphan-interval', '1h'],
    { cwd: process.cwd(), stdio: ['ignore', process.env.CC_DEBUG ? 'inherit' : 'ignore', 'inherit'], env: { ...process.env, LOG_LEVEL: process.env.CC_DEBUG ? 'info' : 'error' } },
  );
  const exited = new Promise<void>((resolve) => child?.once('exit', () => resolve()));
  await eventually(async () => {
    const live = await liveDeliveries(sim, ns);
    if (live.length < CLAIMS.length) throw new Error(`${live.length} deliveries so far`);
  }, { timeoutMs: 20_000 });
  for (const name of CLAIMS) expect(boundCondition(await getClaim(kc, ns, name))?.status).not.toBe('True');
  child.kill('SIGKILL');
  await exited;
  const delivered = await liveDeliveries(sim, ns);
  expect(delivered).toHaveLength(CLAIMS.length);

  // the restarted controller runs as deployed: the chart's ServiceAccount and RBAC
  identity = await installChartAppRbac(kc, 'claim-controller', { release: `ccr-${suffix}`, namespace: ns });
  cc = await startClaimController({
    kubeConfig: identity.kubeConfig,
    fleetToken: ROOT_TOKEN,
    flags: { metricsBindAddress: '0', healthProbeBindAddress: '0', fastPathBindAddress: '0', orphanInterval: 1000 },
    log: createLogger({ name: 'claim-controller-restart', level: 'warn' }),
  });
  for (const name of CLAIMS) {
    const c = await eventually(async () => {
      const claim = await getClaim(kc, ns, name);
      if (boundCondition(claim)?.status !== 'True') throw new Error(`${name} not Bound`);
      return claim;
    }, { timeoutMs: 30_000 });
    const mine = delivered.find((d) => { const o = parseOwnerRef(d.claimRef); return o?.kind === 'SandboxClaim' && o.name === name && o.uid === c.metadata.uid; });
    expect(c.status?.sandbox?.claimID).toBe(mine?.id);
  }
  expect(await liveDeliveries(sim, ns)).toHaveLength(CLAIMS.length);
  expect(releases(sim)).toBe(0);
});
