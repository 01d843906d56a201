import { RbacAuthorizationV1Api, type KubeConfig, type V1PolicyRule } from '@kubernetes/client-node';

export interface ServiceAccountRef {
  readonly name: string;
  readonly namespace: string;
}

/** A RoleBinding `name` in `namespace` of the Role or ClusterRole `role` to one ServiceAccount. */
export async function bindServiceAccount(
  kc: KubeConfig,
  namespace: string,
  name: string,
  role: { readonly kind: 'Role' | 'ClusterRole'; readonly name: string },
  sa: ServiceAccountRef,
): Promise<void> {
  await kc.makeApiClient(RbacAuthorizationV1Api).createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: role.kind, name: role.name },
      subjects: [{ kind: 'ServiceAccount', name: sa.name, namespace: sa.namespace }],
    },
  });
}

/** A Role `name` with `rules` in `namespace`, bound (by a RoleBinding of the same name) to one ServiceAccount. */
export async function grantRole(
  kc: KubeConfig,
  namespace: string,
  name: string,
  rules: V1PolicyRule[],
  sa: ServiceAccountRef,
): Promise<void> {
  await kc.makeApiClient(RbacAuthorizationV1Api).createNamespacedRole({ namespace, body: { metadata: { name }, rules } });
  await bindServiceAccount(kc, namespace, name, { kind: 'Role', name }, sa);
}
