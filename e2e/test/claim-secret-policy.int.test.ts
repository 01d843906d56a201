import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { EXTENSIONS_API_VERSION } from '@sandbox-scale/scale-core';
import {
  applyCrds,
  createTestNamespace,
  deleteNamespace,
  eventually,
  installChartAppRbac,
  runSuffix,
  testKubeConfig,
  type ChartAppIdentity,
} from '../src/index';
import { sendAs, type WriteAnswer } from '../src/testing/kube-request';

// The chart's ValidatingAdmissionPolicy on claim-controller's Secret writes, rule by rule, on the
// real API server: with exactly the chart's RBAC (create and patch Secrets cluster-wide), the
// controller's ServiceAccount writes a SandboxClaim's token Secret and nothing else, in any
// namespace; an admin is not matched.

const suffix = runSuffix();
const release = `csp-${suffix}`;
const policy = `${release}-sandbox-scale-claim-secrets`;
let kc: KubeConfig;
let releaseNs: string;
let tenantNs: string;
let controller: ChartAppIdentity;
/** The uids of real SandboxClaims c1, c2 and c3 of the tenant's namespace: a Secret owned by a claim that does not exist is garbage-collected. */
const uids = new Map<string, string>();

const secretsPath = (ns: string, name?: string): string => `/api/v1/namespaces/${ns}/secrets${name ? `/${name}` : ''}`;
const claimOwner = (name: string) => ({
  apiVersion: EXTENSIONS_API_VERSION,
  kind: 'SandboxClaim',
  name,
  uid: uids.get(name) ?? '',
  controller: true,
  blockOwnerDeletion: false,
});
const tokenData = { token: Buffer.from('t').toString('base64'), claimId: 'eA==', node: 'eA==', address: 'eA==' };
const secret = (name: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name, ownerReferences: [claimOwner('c1')] },
  type: 'Opaque',
  data: tokenData,
  ...extra,
});
const create = (as: KubeConfig, ns: string, body: object): Promise<WriteAnswer> =>
  sendAs(as, { method: 'POST', path: secretsPath(ns), body: JSON.stringify(body) });

function refusedBy(r: WriteAnswer, rule: string): void {
  expect(r.status).toBe(403);
  expect(r.message).toContain(`ValidatingAdmissionPolicy '${policy}'`);
  expect(r.message).toContain(rule);
}

beforeAll(async () => {
  kc = testKubeConfig();
  releaseNs = await createTestNamespace(kc, 'csp-rel');
  tenantNs = await createTestNamespace(kc, 'csp-ten');
  await applyCrds(kc, 'charts/sandbox-scale/crds');
  const custom = kc.makeApiClient(CustomObjectsApi);
  for (const name of ['c1', 'c2', 'c3']) {
    const made = (await custom.createNamespacedCustomObject({
      group: 'extensions.agents.x-k8s.io',
      version: 'v1beta1',
      namespace: tenantNs,
      plural: 'sandboxclaims',
      body: { apiVersion: EXTENSIONS_API_VERSION, kind: 'SandboxClaim', metadata: { name }, spec: { warmPoolRef: { name: 'p' } } },
    })) as { metadata: { uid: string } };
    uids.set(name, made.metadata.uid);
  }
  controller = await installChartAppRbac(kc, 'claim-controller', { release, namespace: releaseNs });
  // an admin's Secret the controller must not take over, and one of a foreign type
  expect(
    (await create(kc, tenantNs, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db-sandbox-token' }, data: tokenData })).status,
  ).toBe(201);
  // the policy takes effect once kube-apiserver has loaded it and its binding
  await eventually(async () => refusedBy(await create(controller.kubeConfig, tenantNs, secret('plain')), 'named <claim>-sandbox-token'), {
    timeoutMs: 30_000,
  });
}, 120_000);

afterAll(async () => {
  await controller?.remove();
  for (const ns of [tenantNs, releaseNs]) if (ns) await deleteNamespace(kc, ns);
});

describe("claim-controller's Secret policy", () => {
  it("lets the controller create a claim's token Secret in any namespace and rewrite its data", async () => {
    expect((await create(controller.kubeConfig, tenantNs, secret('c1-sandbox-token'))).status).toBe(201);
    const rewrite = await sendAs(controller.kubeConfig, {
      method: 'PATCH',
      path: secretsPath(tenantNs, 'c1-sandbox-token'),
      contentType: 'application/json-patch+json',
      body: JSON.stringify([
        { op: 'test', path: '/metadata/ownerReferences/0/uid', value: uids.get('c1') },
        { op: 'replace', path: '/data', value: { ...tokenData, token: Buffer.from('u').toString('base64') } },
      ]),
    });
    expect(rewrite.status).toBe(200);
  });

  it('refuses every other Secret write with 403, naming the policy and its rule', async () => {
    const as = controller.kubeConfig;
    refusedBy(await create(as, tenantNs, secret('other')), 'named <claim>-sandbox-token');
    // a typed Secret another component acts on: a ServiceAccount token of kube-system's
    refusedBy(
      await create(as, 'kube-system', {
        ...secret('x-sandbox-token'),
        type: 'kubernetes.io/service-account-token',
        metadata: { name: 'x-sandbox-token', annotations: { 'kubernetes.io/service-account.name': 'default' } },
        data: undefined,
      }),
      'only Opaque Secrets',
    );
    refusedBy(
      await create(as, tenantNs, { ...secret('d-sandbox-token'), data: { ...tokenData, '.dockerconfigjson': 'e30=' } }),
      'only the keys',
    );
    refusedBy(
      await create(as, tenantNs, { ...secret('n-sandbox-token'), metadata: { name: 'n-sandbox-token' } }),
      'controlled by a SandboxClaim',
    );
    // taking over the admin's Secret by giving it a claim as controller
    const takeover = await sendAs(as, {
      method: 'PATCH',
      path: secretsPath(tenantNs, 'db-sandbox-token'),
      contentType: 'application/merge-patch+json',
      body: JSON.stringify({ metadata: { ownerReferences: [claimOwner('c2')] }, data: tokenData }),
    });
    refusedBy(takeover, 'already controls');
    // moving a claim's Secret to another claim
    const moved = await sendAs(as, {
      method: 'PATCH',
      path: secretsPath(tenantNs, 'c1-sandbox-token'),
      contentType: 'application/merge-patch+json',
      body: JSON.stringify({ metadata: { ownerReferences: [claimOwner('c3')] } }),
    });
    refusedBy(moved, 'already controls');
    // RBAC grants no delete at all
    expect((await sendAs(as, { method: 'DELETE', path: secretsPath(tenantNs, 'c1-sandbox-token') })).status).toBe(403);
  });

  it('does not match other users', async () => {
    expect((await create(kc, tenantNs, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'admin-own' }, type: 'Opaque' })).status).toBe(
      201,
    );
  });
});
