import { randomBytes, randomUUID } from 'node:crypto';
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { ANNOTATIONS, formatOwnerRef, OwnerRefKey, type SandboxOwner } from '@sandbox-scale/scale-core';
import { eventually, runSuffix } from '../src/index';
import { jsonOf, kubeRaw } from '../src/testing/data-plane-requests';
import { waitReplicasHold } from '../src/testing/claim-ref-keys';
import { grantEditRole } from '../src/testing/tenant-role';
import { applyWarmPool, claimReady, startSuiteSystem, waitPoolReady } from '../src/system/suite-system';
import type { SystemUnderTest } from '../src/system/system-under-test';
import { sandboxdCall, sandboxdRow, type SandboxdNode } from '../src/testing/sandboxd';

// The claim-reference keyring rotated under the running apps, as an operator (or warmpool-driver's
// leader) does it: a new key joins to verify, then signs while the old still verifies, then the old
// leaves. A claim bound before the rotation keeps its commands, a VM whose reference only the old
// key proves is still adopted and renewed while that key verifies, and once the key leaves the
// keyring none of that happens any more. Each step waits until every claim-controller and
// sandbox-apiserver replica reports the keys the step needs (sandbox_scale_claim_ref_key_info).

const ns = `t-keys-${runSuffix()}`;
const IMAGE = 'ghcr.io/example/keys-agent:1.0';
const EXT = { group: 'extensions.agents.x-k8s.io', version: 'v1beta1' };
let sys: SystemUnderTest;
let original: string[];
let tenant: KubeConfig;

beforeAll(async () => {
  sys = await startSuiteSystem({
    namespaces: [ns],
    local: { nodes: 1, speed: 0, metrics: true, publishInterval: '1s', extraArgs: { 'claim-controller': ['--orphan-interval', '1s'] } },
  });
  original = await sys.claimRefKeys();
  await applyWarmPool(sys, ns, { image: IMAGE, replicas: 4 });
  await waitPoolReady(sys, ns, 4, { atLeast: true });
  await grantEditRole(sys.kubeConfig, ns, 'agent');
  tenant = (await sys.tenant(ns, 'agent')).kubeConfig;
}, 240_000);

/** VMs claimed under a reference only the old key proves, left unadopted on purpose. */
const leftOnNode: string[] = [];

afterAll(async () => {
  // released before the old key comes back: proven again, the orphan pass would write a claim
  // for them while a later suite watches for claims nobody made
  for (const id of leftOnNode) {
    const res = await sandboxdCall(sys.nodes[0] as SandboxdNode, `/v1/sandboxes/${encodeURIComponent(id)}/release`, { method: 'POST' });
    if (res.status !== 204 && res.status !== 404) throw new Error(`release ${id}: ${res.status} ${await res.text()}`);
  }
  // the keys every other suite's sandboxes were made with, held by every replica before the next suite claims
  if (original !== undefined && sys !== undefined) await rotateTo(original);
  await sys?.stop();
}, 120_000);

const newKey = (): string => randomBytes(32).toString('base64');

/** Writes the keyring, then waits until every replica holds exactly it: the first key signing, the rest verifying. */
async function rotateTo(keys: readonly string[]): Promise<void> {
  await sys.setClaimRefKeys(keys);
  await waitReplicasHold(sys, keys);
}

/** Claims a VM on the node directly, under `claimRef`, as a fast-path delivery whose record was lost. */
async function claimDirect(claimRef: string, ttlSeconds: number): Promise<{ id: string; deadline: string }> {
  const res = await sandboxdCall(sys.nodes[0] as SandboxdNode, '/v1/claim', {
    method: 'POST',
    body: { template: IMAGE, ttl_seconds: ttlSeconds, claim_ref: claimRef },
  });
  if (res.status !== 200) throw new Error(`claim: ${res.status} ${await res.text()}`);
  return (await res.json()) as { id: string; deadline: string };
}

const fastclaim = (name: string): SandboxOwner => ({ kind: 'FastPathClaim', uid: randomUUID(), namespace: ns, name });
const renewed = (name: string): SandboxOwner => ({ kind: 'Sandbox', uid: randomUUID(), namespace: ns, name, renewed: true });

/** The SandboxClaim the orphan pass wrote for a delivery, if any. */
async function claimOf(name: string): Promise<{ uid?: string; ready: boolean } | undefined> {
  const custom = sys.kubeConfig.makeApiClient(CustomObjectsApi);
  try {
    const c = (await custom.getNamespacedCustomObject({ ...EXT, namespace: ns, plural: 'sandboxclaims', name })) as {
      metadata: { annotations?: Record<string, string> };
      status?: { conditions?: { type: string; status: string }[] };
    };
    return {
      ...(c.metadata.annotations?.[ANNOTATIONS.deliveryUid] !== undefined ? { uid: c.metadata.annotations[ANNOTATIONS.deliveryUid] } : {}),
      ready: c.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True') === true,
    };
  } catch (err) {
    if ((err as { code?: number }).code === 404) return undefined;
    throw err;
  }
}

/** The name a Ready claim's sandbox is served under. */
async function sandboxOfClaim(name: string): Promise<string> {
  const custom = sys.kubeConfig.makeApiClient(CustomObjectsApi);
  const c = (await custom.getNamespacedCustomObject({ ...EXT, namespace: ns, plural: 'sandboxclaims', name })) as {
    status?: { sandbox?: { name?: string } };
  };
  const sandbox = c.status?.sandbox?.name;
  if (!sandbox) throw new Error(`claim ${name} names no sandbox`);
  return sandbox;
}

const exec = (sandbox: string) =>
  kubeRaw(tenant, {
    method: 'POST',
    path: `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes/${sandbox}/exec`,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ argv: ['echo', 'still mine'] }),
  });

/** The node's deadline of a sandbox, in ms. */
async function deadlineOf(id: string): Promise<number> {
  const row = await sandboxdRow(sys.nodes[0] as SandboxdNode, id);
  if (row?.deadline === undefined) throw new Error(`the node has no deadline for ${id}`);
  return Date.parse(row.deadline);
}

describe('rotating the claim-reference key', () => {
  it('what the old key proved is still adopted, renewed and served through the rotation, and nothing of it once the key leaves', async () => {
    const k1 = original;
    const k2 = newKey();
    const oldRing = OwnerRefKey.fromText(k1.join('\n'));

    // a claim bound before the rotation, its node reference signed with the old key
    await claimReady(sys, ns, 'before');
    const sandbox = await sandboxOfClaim('before');
    await eventually(async () => expect((await exec(sandbox)).status).toBe(200), { timeoutMs: 60_000, intervalMs: 500 });

    // 1. the new key verifies only; 2. it signs, the old still verifies
    await rotateTo([...k1, k2]);
    await rotateTo([k2, ...k1]);
    const exec1 = await exec(sandbox);
    expect({ status: exec1.status, stdout: jsonOf<{ stdout: string }>(exec1).stdout }).toEqual({ status: 200, stdout: 'still mine\n' });

    // a lost fast-path record and a +renew lease, both written with the old key before the rotation
    const adopt = fastclaim('adopted-old');
    await claimDirect(formatOwnerRef(adopt, oldRing), 300);
    const renew = renewed('renewed-old');
    const leased = await claimDirect(formatOwnerRef(renew, oldRing), 120);
    leftOnNode.push(leased.id);
    const leasedUntil = Date.parse(leased.deadline);
    await eventually(
      async () => {
        expect(await claimOf('adopted-old')).toEqual({ uid: adopt.uid, ready: true });
        // a lease this short of its renewal point is renewed at once
        expect(await deadlineOf(leased.id)).toBeGreaterThan(leasedUntil);
      },
      { timeoutMs: 120_000, intervalMs: 500 },
    );
    const renewedTo = await deadlineOf(leased.id);

    // 3. the old key leaves
    await rotateTo([k2]);
    const refused = await exec(sandbox);
    expect({ status: refused.status, message: jsonOf<{ message: string }>(refused).message }).toEqual({
      status: 403,
      message: expect.stringContaining('under a claim reference it did not write') as unknown,
    });
    // a delivery the old key alone proves, then one the new key proves: once the orphan pass has
    // adopted the second, it has passed over the first (made before it on the same node) and left it
    const orphanOld = fastclaim('orphan-old');
    leftOnNode.push((await claimDirect(formatOwnerRef(orphanOld, oldRing), 300)).id);
    const orphanNew = fastclaim('orphan-new');
    await claimDirect(formatOwnerRef(orphanNew, OwnerRefKey.fromText(k2)), 300);
    await eventually(async () => expect(await claimOf('orphan-new')).toEqual({ uid: orphanNew.uid, ready: true }), {
      timeoutMs: 120_000,
      intervalMs: 500,
    });
    expect(await claimOf('orphan-old')).toBeUndefined();
    // and the +renew lease the old key proved is renewed no more: sandbox-apiserver says so, and its deadline stays
    await eventually(
      async () => {
        const log = [...(await sys.appLogs())]
          .filter(([app]) => /sandbox-apiserver/.test(app))
          .map(([, text]) => text)
          .join('\n');
        if (!log.split('\n').some((l) => l.includes(leased.id) && l.includes('not renewing')))
          throw new Error('the renewer has not passed over the old-key lease yet');
      },
      { timeoutMs: 90_000, intervalMs: 500 },
    );
    expect(await deadlineOf(leased.id)).toBe(renewedTo);
    // no replica restarted to take any of the three steps
    expect(await sys.appsThatExited()).toEqual([]);
    process.stdout.write(
      `claim-ref key rotation: old-key claim exec 200 then 403; old-key orphan adopted then not; old-key lease renewed ${Math.round((renewedTo - leasedUntil) / 1000)} s further, then not\n`,
    );
  }, 600_000);
});
