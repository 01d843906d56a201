import { randomBytes } from 'node:crypto';
import { CoreV1Api, RbacAuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import {
  applyCrds,
  createCA,
  createLeaf,
  createTestNamespace,
  deleteNamespace,
  eventually,
  kubeconfigForServiceAccount,
  runSuffix,
  testKubeConfig,
  type CertPair,
} from '@sandbox-scale/e2e';
import { grantRole } from '@sandbox-scale/kube-runtime/testing';
import { request } from 'node:https';
import { startSandboxApiserver, type RunningSandboxApiserver } from '../src';
import { quietLog } from './fleet-fixture';
import { OwnerRefKey } from '@sandbox-scale/scale-core';

// The authentication ConfigMap is kube-apiserver's own and shared by every suite, so this one
// points the server at a ConfigMap of its namespace with the same keys and rotates that.
const CM = 'authentication';
const suffix = runSuffix();
let admin: KubeConfig;
let ns: string;
let server: RunningSandboxApiserver;
let caA: CertPair;
let caB: CertPair;
let proxyB: CertPair;

function data(ca: CertPair): Record<string, string> {
  return {
    'requestheader-client-ca-file': ca.cert,
    'requestheader-allowed-names': '["front-proxy-client"]',
    'requestheader-username-headers': '["X-Remote-User"]',
    'requestheader-group-headers': '["X-Remote-Group"]',
    'requestheader-extra-headers-prefix': '["X-Remote-Extra-"]',
  };
}

/** Discovery as a front proxy would forward it: system:masters, so only authentication decides. */
function viaProxy(client: CertPair): Promise<number> {
  return new Promise((resolve, reject) => {
    const u = new URL(server.url);
    const req = request(
      {
        hostname: u.hostname,
        port: u.port,
        path: '/apis/agents.x-k8s.io/v1beta1',
        rejectUnauthorized: false,
        cert: client.cert,
        key: client.key,
        headers: { 'X-Remote-User': 'alice', 'X-Remote-Group': 'system:masters', Accept: 'application/json' },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

async function expectStatus(code: number): Promise<void> {
  await eventually(async () => expect(await viaProxy(proxyB)).toBe(code), { timeoutMs: 30_000 });
}

beforeAll(async () => {
  admin = testKubeConfig();
  await applyCrds(admin, 'charts/sandbox-scale/crds');
  ns = await createTestNamespace(admin, 'authcm');
  [caA, caB] = await Promise.all([createCA(`authcm-a-${suffix}`), createCA(`authcm-b-${suffix}`)]);
  proxyB = await createLeaf(caB, { commonName: 'front-proxy-client', client: true });
  // the server's own identity: delegated auth, and reading the one ConfigMap (as the chart grants in kube-system)
  const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
  const sa = await kubeconfigForServiceAccount(admin, ns, 'sbapi');
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: `authcm-${suffix}` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:auth-delegator' },
      subjects: [{ kind: 'ServiceAccount', name: 'sbapi', namespace: ns }],
    },
  });
  await grantRole(
    admin,
    ns,
    'auth-reader',
    [{ apiGroups: [''], resources: ['configmaps'], resourceNames: [CM], verbs: ['get', 'list', 'watch'] }],
    {
      name: 'sbapi',
      namespace: ns,
    },
  );
  await admin.makeApiClient(CoreV1Api).createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: CM }, data: data(caA) } });
  server = await startSandboxApiserver({
    claimRefKey: new OwnerRefKey(randomBytes(32)),
    kubeConfig: sa,
    securePort: 0,
    bindAddress: '127.0.0.1',
    log: quietLog,
    authenticationConfigMap: { namespace: ns, name: CM },
  });
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await admin
    .makeApiClient(RbacAuthorizationV1Api)
    .deleteClusterRoleBinding({ name: `authcm-${suffix}` })
    .catch(() => undefined);
  await deleteNamespace(admin, ns);
});

describe('the authentication ConfigMap', () => {
  it('is reloaded when it changes: a rotated front-proxy CA applies without a restart, and a deleted ConfigMap stops front-proxy logins', async () => {
    const core = admin.makeApiClient(CoreV1Api);
    // the proxy's certificate comes from CA B, which the server does not trust yet
    expect(await viaProxy(proxyB)).toBe(401);

    await core.replaceNamespacedConfigMap({ name: CM, namespace: ns, body: { metadata: { name: CM }, data: data(caB) } });
    await expectStatus(200);

    // an allowed-names list without the proxy's name turns it away again
    await core.replaceNamespacedConfigMap({
      name: CM,
      namespace: ns,
      body: { metadata: { name: CM }, data: { ...data(caB), 'requestheader-allowed-names': '["another-proxy"]' } },
    });
    await expectStatus(401);

    await core.replaceNamespacedConfigMap({ name: CM, namespace: ns, body: { metadata: { name: CM }, data: data(caB) } });
    await expectStatus(200);

    await core.deleteNamespacedConfigMap({ name: CM, namespace: ns });
    await expectStatus(401);

    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: CM }, data: data(caB) } });
    await expectStatus(200);
  });
});
