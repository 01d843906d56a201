import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { AuthorizationV1Api, CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import {
  applyCrds,
  createTestNamespace,
  deleteNamespace,
  eventually,
  kubeconfigForServiceAccount,
  runSuffix,
  serviceAccountToken,
  runTool,
  testKubeConfig,
} from '@sandbox-scale/e2e';
import { createLogger, ResourceClient } from '@sandbox-scale/kube-runtime';
import { grantRole } from '@sandbox-scale/kube-runtime/testing';
import { FAST_PATH_AUDIENCE, servedNameOf, OwnerRefKey } from '@sandbox-scale/scale-core';
import { SandboxdClient } from '@sandbox-scale/sandboxd-client';
import { startSim, type Sim } from '@sandbox-scale/sandboxd-sim';
import { Agent, request } from 'undici';
import { startClaimController, type ClaimControllerHandle } from '../src';
import { SecretAccess, selfSubjectReviewer } from '../src/record/secret-access';
import { SandboxClaimResource } from '../src/resources';
import {
  boundCondition,
  createClaim as createClaimOf,
  createPool,
  deleteInventories,
  eventsOf,
  getClaim,
  publishInventories,
  releases,
  selectorOf,
  waitForBound,
  waitForWarmPools,
} from './fixtures';

/** The key every process of this test proves claim references with. */
const CLAIM_REF_KEY = new OwnerRefKey(randomBytes(32));

// Claim namespaces as the chart grants them: claim-controller runs under the chart's own
// ServiceAccount with the chart's RBAC (helm install / upgrade of this release), so what it may
// write is exactly what an installed controller may write.
const suffix = runSuffix();
const IMAGE = `registry.local/cc-ns-${suffix}:1`;
// A fleet token of its own, so no other controller sharing this control plane can claim on these nodes.
const TOKEN = `fleet-${randomBytes(12).toString('hex')}`;
const release = `cns-${suffix}`;
const saName = `${release}-sandbox-scale-claim-controller`;
const chartDir = join(__dirname, '..', '..', '..', 'charts', 'sandbox-scale');
// Only the claims of this file are reconciled by its controller (other suites share the cluster).
const LABELS = { 'test.sandbox-scale.io/suite': `claim-namespaces-${suffix}` };
let kc: KubeConfig;
let saKc: KubeConfig;
let releaseNs: string;
let sim: Sim;
let cc: ClaimControllerHandle;
const namespaces: string[] = [];
const insecure = new Agent({ connect: { rejectUnauthorized: false } });

async function helm(verb: 'install' | 'upgrade', secretNamespaces: string[]): Promise<void> {
  const res = await runTool('helm', [
    verb,
    release,
    chartDir,
    '--namespace',
    releaseNs,
    '--skip-crds',
    '--set',
    'workloads=false',
    '--set',
    'apiService.enabled=false',
    '--set-json',
    `claimController.secretNamespaces=${JSON.stringify(secretNamespaces)}`,
  ]);
  expect(res.stderr).toBe('');
  expect(res.code).toBe(0);
}

async function newNamespace(prefix: string): Promise<string> {
  const ns = await createTestNamespace(kc, prefix);
  namespaces.push(ns);
  await createPool(kc, ns, 'base', IMAGE);
  return ns;
}

/** What RBAC lets the controller's ServiceAccount do with Secrets in `ns` (the API server's answer, as the controller gets it). */
async function mayWriteSecrets(ns: string): Promise<boolean> {
  const r = await saKc
    .makeApiClient(AuthorizationV1Api)
    .createSelfSubjectAccessReview({ body: { spec: { resourceAttributes: { namespace: ns, verb: 'patch', resource: 'secrets' } } } });
  return r.status?.allowed === true;
}

/** VMs the nodes handed over, over the life of the nodes (released ones included). */
function deliveredTotal(): number {
  return sim.nodes.reduce((sum, n) => {
    const m = sim.node(n.name).state.metrics;
    return sum + m.claimsWarm + m.claimsClone + m.claimsCold;
  }, 0);
}

/** The live VMs the nodes hold for ns/name, from their own GET /v1/sandboxes?claim_ref=. */
/** Every VM the nodes delivered for ns/name, whatever owner uid its claim reference carries. */
async function deliveriesFor(ns: string, name: string): Promise<string[]> {
  const ids: string[] = [];
  for (const n of sim.nodes) {
    const rows = await new SandboxdClient({ baseUrl: n.url, token: TOKEN }).sandboxes();
    ids.push(...rows.filter((r) => servedNameOf(r.claimRef) === `${ns}/${name}`).map((r) => r.id));
  }
  return ids;
}

async function waitBound(ns: string, name: string) {
  return waitForBound(kc, ns, name, 60_000);
}

async function waitReason(ns: string, name: string, reason: string) {
  return eventually(
    async () => {
      const c = await getClaim(kc, ns, name);
      if (boundCondition(c)?.reason !== reason) throw new Error(`${ns}/${name}: ${JSON.stringify(c.status?.conditions)}`);
      return c;
    },
    { timeoutMs: 30_000 },
  );
}

/** A claim of the pool `base`, carrying the label this file's controller selects. */
async function createClaim(ns: string, name: string): Promise<void> {
  await createClaimOf(kc, ns, name, 'base', { labels: LABELS });
}

const readyCondition = (c: Awaited<ReturnType<typeof getClaim>>) => c.status?.conditions?.find((k) => k.type === 'Ready');

beforeAll(async () => {
  kc = testKubeConfig();
  await applyCrds(kc, 'charts/sandbox-scale/crds');
  releaseNs = await createTestNamespace(kc, 'cns-release');
  await helm('install', []);
  sim = await startSim({ nodes: 2, speed: 0, token: TOKEN, pools: [{ template: IMAGE, warm: 6 }] });
  await waitForWarmPools(sim, TOKEN, IMAGE, 6);
  await publishInventories(kc, sim, suffix, { token: TOKEN });
  saKc = await kubeconfigForServiceAccount(kc, releaseNs, saName);
  cc = await startClaimController({
    claimRefKey: CLAIM_REF_KEY,
    kubeConfig: saKc,
    fleetToken: TOKEN,
    claimSelector: selectorOf(LABELS),
    // An allowed namespace is trusted for the whole file, so RBAC taken away after the check is
    // seen only by the Secret write itself (the window a shorter cache time narrows, never closes).
    secretAccess: new SecretAccess({ review: selfSubjectReviewer(saKc), allowedTtlMs: 3_600_000, deniedTtlMs: 1_000 }),
    flags: {
      metricsBindAddress: '0',
      healthProbeBindAddress: '0',
      fastPathBindAddress: '127.0.0.1:0',
      orphanInterval: 3_600_000,
      namespaceRecheckInterval: 2_000,
    },
    log: createLogger({ name: 'claim-namespaces-test', level: 'error' }),
  });
});

afterAll(async () => {
  await cc?.stop();
  if (sim) await deleteInventories(kc, sim, suffix);
  await sim?.stop();
  if (releaseNs) await runTool('helm', ['uninstall', release, '--namespace', releaseNs]);
  for (const ns of [...namespaces, releaseNs]) if (ns) await deleteNamespace(kc, ns);
  await insecure.close();
});

describe('claims and the namespaces claim-controller may write Secrets in', () => {
  it('binds a claim in a namespace created after the install, with the chart defaults', async () => {
    const ns = await newNamespace('cns-late');
    const before = deliveredTotal();
    await createClaim(ns, 'late');
    const c = await waitBound(ns, 'late');
    expect(readyCondition(c)).toMatchObject({ status: 'True', reason: 'NodeLocalClaim' });
    const secret = await kc
      .makeApiClient(CoreV1Api)
      .readNamespacedSecret({ namespace: ns, name: c.status?.sandbox?.tokenSecretName ?? '' });
    expect(secret.data?.token).toBeTruthy();
    expect(await deliveriesFor(ns, 'late')).toEqual([c.status?.sandbox?.claimID]);
    expect(deliveredTotal()).toBe(before + 1);
  });

  it('with the namespaces restricted, refuses a claim elsewhere before any VM is claimed, and binds it once helm upgrade enables the namespace', async () => {
    const enabled = await newNamespace('cns-on');
    const other = await newNamespace('cns-off');
    await helm('upgrade', [enabled]);
    await eventually(async () => {
      expect(await mayWriteSecrets(other)).toBe(false);
      expect(await mayWriteSecrets(enabled)).toBe(true);
    });
    const before = deliveredTotal();

    await createClaim(other, 'refused');
    const refused = await waitReason(other, 'refused', 'NamespaceNotEnabled');
    const bound = boundCondition(refused);
    expect(bound?.status).toBe('False');
    expect(bound?.message).toContain(`namespace "${other}"`);
    expect(bound?.message).toContain('claimController.secretNamespaces');
    expect(readyCondition(refused)).toMatchObject({ status: 'False', reason: 'NamespaceNotEnabled', message: bound?.message });
    expect(refused.status?.sandbox?.claimID).toBeUndefined();

    // The enabled namespace binds through the chart's Role there.
    await createClaim(enabled, 'allowed');
    const allowed = await waitBound(enabled, 'allowed');
    expect(await deliveriesFor(enabled, 'allowed')).toEqual([allowed.status?.sandbox?.claimID]);

    // The fast path refuses the same way, with a Status, before claiming.
    const callerNs = await createTestNamespace(kc, 'cns-fast');
    namespaces.push(callerNs);
    await createPool(kc, callerNs, 'base', IMAGE);
    await grantRole(
      kc,
      callerNs,
      'claimer',
      [{ apiGroups: ['extensions.agents.x-k8s.io'], resources: ['sandboxclaims'], verbs: ['create'] }],
      { name: 'claimer', namespace: callerNs },
    );
    // the fast path accepts only tokens minted for its own audience
    const callerToken = await serviceAccountToken(kc, callerNs, 'claimer', [FAST_PATH_AUDIENCE]);
    const fast = await eventually(async () => {
      const r = await request(`${cc.fastPathUrl}/v1/claims`, {
        method: 'POST',
        dispatcher: insecure,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${callerToken}` },
        body: JSON.stringify({ namespace: callerNs, name: 'fast', warmPool: 'base' }),
      });
      const body = (await r.body.json()) as {
        kind?: string;
        code?: number;
        reason?: string;
        message?: string;
        details?: { causes?: { reason: string; field: string }[] };
      };
      if (r.statusCode !== 403 || !body.message?.includes('claimController.secretNamespaces'))
        throw new Error(`${r.statusCode} ${JSON.stringify(body)}`);
      return body;
    });
    expect(fast).toMatchObject({ kind: 'Status', code: 403, reason: 'Forbidden' });
    expect(fast.details?.causes).toEqual([expect.objectContaining({ reason: 'NamespaceNotEnabled', field: 'namespace' })]);
    expect(await deliveriesFor(callerNs, 'fast')).toEqual([]);

    // Nothing was delivered for the refused claims; the one allowed claim got exactly one VM.
    expect(await deliveriesFor(other, 'refused')).toEqual([]);
    expect(deliveredTotal()).toBe(before + 1);
    // One Warning event for the refusal, however often the claim was checked again since.
    const events = await eventually(async () => {
      const evs = (await eventsOf(other, 'refused')).filter((e) => e.reason === 'NamespaceNotEnabled');
      if (evs.length === 0) throw new Error('no NamespaceNotEnabled event yet');
      return evs;
    });
    expect(events).toHaveLength(1);
    expect(events[0]?.note).toContain('claimController.secretNamespaces');

    await helm('upgrade', [enabled, other]);
    const late = await waitBound(other, 'refused');
    expect(readyCondition(late)).toMatchObject({ status: 'True', reason: 'NodeLocalClaim' });
    expect(await deliveriesFor(other, 'refused')).toEqual([late.status?.sandbox?.claimID]);
    const secret = await kc
      .makeApiClient(CoreV1Api)
      .readNamespacedSecret({ namespace: other, name: late.status?.sandbox?.tokenSecretName ?? '' });
    expect(secret.data?.token).toBeTruthy();
    expect(deliveredTotal()).toBe(before + 2);
  });

  it('names a record that fails after the delivery, keeps that one VM, and records it once the cause is gone', async () => {
    await helm('upgrade', []);
    const ns = await newNamespace('cns-quota');
    await eventually(async () => {
      expect(await mayWriteSecrets(ns)).toBe(true);
    });
    // A quota of no Secrets: RBAC allows the write, admission refuses it (403 exceeded quota).
    const core = kc.makeApiClient(CoreV1Api);
    const quota = await core.createNamespacedResourceQuota({
      namespace: ns,
      body: { metadata: { name: 'no-secrets' }, spec: { hard: { secrets: '0' } } },
    });
    // This control plane runs no quota controller: its usage is written here, as that controller
    // would (admission refuses with "exceeded quota" once hard and used are known).
    await core.replaceNamespacedResourceQuotaStatus({
      namespace: ns,
      name: 'no-secrets',
      body: { ...quota, status: { hard: { secrets: '0' }, used: { secrets: '0' } } },
    });
    const before = deliveredTotal();
    const releasedBefore = releases(sim);

    await createClaim(ns, 'held');
    await createClaim(ns, 'dropped');
    const held = await waitReason(ns, 'held', 'RecordFailed');
    const failed = boundCondition(held);
    expect(failed?.status).toBe('False');
    expect(failed?.message).toContain('exceeded quota: no-secrets');
    expect(failed?.message).toContain('The sandbox is kept');
    expect(readyCondition(held)).toMatchObject({ status: 'False', reason: 'RecordFailed' });
    const heldIds = await deliveriesFor(ns, 'held');
    expect(heldIds).toHaveLength(1);
    expect(failed?.message).toContain(heldIds[0]);

    // A claim deleted while its record fails: its VM goes back to the node.
    await waitReason(ns, 'dropped', 'RecordFailed');
    expect(await deliveriesFor(ns, 'dropped')).toHaveLength(1);
    await new ResourceClient(kc, SandboxClaimResource).delete(ns, 'dropped');
    await eventually(async () => {
      expect(await deliveriesFor(ns, 'dropped')).toEqual([]);
      expect(releases(sim)).toBe(releasedBefore + 1);
    });

    await core.deleteNamespacedResourceQuota({ namespace: ns, name: 'no-secrets' });
    const bound = await waitBound(ns, 'held');
    expect(bound.status?.sandbox?.claimID).toBe(heldIds[0]);
    expect(readyCondition(bound)).toMatchObject({ status: 'True', reason: 'NodeLocalClaim' });
    expect(await deliveriesFor(ns, 'held')).toEqual(heldIds);
    // two claims, two VMs: no second VM for either while their records failed
    expect(deliveredTotal()).toBe(before + 2);
    const reasons = (await eventsOf(ns, 'held')).map((e) => e.reason);
    expect(reasons.filter((r) => r === 'RecordFailed')).toHaveLength(1);
    expect(reasons).not.toContain('NoWarmCapacity');
  });
  it('names an RBAC refusal of the record after the permission check, keeps that one VM, and records it once the namespace is enabled again', async () => {
    const ns = await newNamespace('cns-revoked');
    const keep = await newNamespace('cns-keep');
    await helm('upgrade', [ns, keep]);
    await eventually(async () => {
      expect(await mayWriteSecrets(ns)).toBe(true);
    });
    // a first claim there binds, and the controller now holds an allowed answer for the namespace
    await createClaim(ns, 'first');
    await waitBound(ns, 'first');
    await helm('upgrade', [keep]);
    await eventually(async () => {
      expect(await mayWriteSecrets(ns)).toBe(false);
    });
    const before = deliveredTotal();

    await createClaim(ns, 'revoked');
    const held = await waitReason(ns, 'revoked', 'RecordFailed');
    const failed = boundCondition(held);
    expect(failed?.message).toMatch(
      /^metadata\.namespace: node \S+ delivered sandbox sb_\S+, but writing its Bound record failed \(403 Forbidden: /,
    );
    // the token Secret is created first, and patched only when it is the claim's own
    expect(failed?.message).toMatch(/cannot (create|patch) resource "secrets"/);
    expect(failed?.message).toContain('claimController.secretNamespaces');
    const ids = await deliveriesFor(ns, 'revoked');
    expect(ids).toHaveLength(1);

    await helm('upgrade', [ns, keep]);
    const bound = await waitBound(ns, 'revoked');
    expect(bound.status?.sandbox?.claimID).toBe(ids[0]);
    expect(await deliveriesFor(ns, 'revoked')).toEqual(ids);
    expect(deliveredTotal()).toBe(before + 1);
    expect((await eventsOf(ns, 'revoked')).map((e) => e.reason)).not.toContain('NoWarmCapacity');
  });
});
