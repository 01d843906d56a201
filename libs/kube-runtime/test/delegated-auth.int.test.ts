import { RbacAuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import {
  createTestNamespace,
  deleteNamespace,
  eventually,
  kubeconfigForServiceAccount,
  runSuffix,
  serviceAccountToken,
  testKubeConfig,
} from '@sandbox-scale/e2e';
import { DelegatedAuth, isAuthUnavailable, type AccessAttributes } from '../src/index';

const AUDIENCE = 'kruntime-test-audience';
const suffix = runSuffix();
const admin = testKubeConfig();
let ns: string;
let reviewer: KubeConfig;
let noRights: KubeConfig;

const getPods = (namespace: string): AccessAttributes => ({ resource: { namespace, verb: 'get', group: '', resource: 'pods', name: 'p' } });

beforeAll(async () => {
  ns = await createTestNamespace(admin, 'kr-auth');
  // the component runs as an app would: a ServiceAccount bound to system:auth-delegator
  reviewer = await kubeconfigForServiceAccount(admin, ns, 'reviewer');
  noRights = await kubeconfigForServiceAccount(admin, ns, 'no-rights');
  const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: `kr-auth-${suffix}` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:auth-delegator' },
      subjects: [{ kind: 'ServiceAccount', name: 'reviewer', namespace: ns }],
    },
  });
  await rbac.createNamespacedRole({
    namespace: ns,
    body: { metadata: { name: 'pod-reader' }, rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }] },
  });
  await rbac.createNamespacedRoleBinding({
    namespace: ns,
    body: {
      metadata: { name: 'pod-reader' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'pod-reader' },
      subjects: [
        { kind: 'Group', name: 'x,system:masters', apiGroup: 'rbac.authorization.k8s.io' },
        { kind: 'ServiceAccount', name: 'caller', namespace: ns },
      ],
    },
  });
  await eventually(async () =>
    expect(
      await new DelegatedAuth(reviewer).authorize({ username: 'probe', groups: ['x,system:masters'], extra: {} }, getPods(ns)),
    ).toMatchObject({ allowed: true }),
  );
}, 60_000);

afterAll(async () => {
  await admin
    .makeApiClient(RbacAuthorizationV1Api)
    .deleteClusterRoleBinding({ name: `kr-auth-${suffix}` })
    .catch(() => undefined);
  await deleteNamespace(admin, ns);
});

describe('DelegatedAuth against kube-apiserver', () => {
  it('accepts a token issued for its audience and refuses one for another audience or for the API server', async () => {
    const auth = new DelegatedAuth(reviewer, { audiences: [AUDIENCE] });
    const ours = await serviceAccountToken(admin, ns, 'caller', [AUDIENCE]);
    expect(await auth.authenticateToken(ours)).toMatchObject({
      username: `system:serviceaccount:${ns}:caller`,
      groups: expect.arrayContaining(['system:serviceaccounts']) as unknown,
    });
    expect(await auth.authenticateToken(await serviceAccountToken(admin, ns, 'caller', ['another-service']))).toBeUndefined();
    expect(await auth.authenticateToken(await serviceAccountToken(admin, ns, 'caller', []))).toBeUndefined();
    expect(await auth.authenticateToken('not-a-token')).toBeUndefined();
  });

  it("without audiences accepts the API server's own tokens only", async () => {
    const auth = new DelegatedAuth(reviewer);
    expect(await auth.authenticateToken(await serviceAccountToken(admin, ns, 'caller', []))).toMatchObject({
      username: `system:serviceaccount:${ns}:caller`,
    });
    expect(await auth.authenticateToken(await serviceAccountToken(admin, ns, 'caller', [AUDIENCE]))).toBeUndefined();
  });

  it('asks SubjectAccessReview with the exact groups: a group x,system:masters is that group, not system:masters', async () => {
    const auth = new DelegatedAuth(reviewer, { alwaysAllowGroups: ['system:masters'] });
    const mallory = { username: 'mallory', groups: ['x,system:masters'], extra: {} };
    expect(await auth.authorize(mallory, getPods(ns))).toMatchObject({ allowed: true });
    // what RBAC grants that group, and nothing of what system:masters may do
    const other = await auth.authorize(mallory, getPods('kube-system'));
    expect(other.allowed).toBe(false);
    expect(
      (await auth.authorize(mallory, { resource: { namespace: ns, verb: 'delete', group: '', resource: 'pods', name: 'p' } })).allowed,
    ).toBe(false);
  });

  it('fails closed when it may not review: no user, no decision, nothing cached', async () => {
    const auth = new DelegatedAuth(noRights, { audiences: [AUDIENCE] });
    const ours = await serviceAccountToken(admin, ns, 'caller', [AUDIENCE]);
    const err = await auth.authenticateToken(ours).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isAuthUnavailable(err)).toBe(true);
    expect((err as Error).message).toBe('authentication is unavailable, retry later');
    const denied = await auth.authorize({ username: 'alice', groups: [], extra: {} }, getPods(ns)).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isAuthUnavailable(denied)).toBe(true);
  });
});
