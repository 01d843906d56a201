import { RbacAuthorizationV1Api, type KubeConfig, type V1PolicyRule } from '@kubernetes/client-node';

/** A Role of these rules, bound to the namespace's ServiceAccount of the same name (which may not exist yet). */
export async function grantTenantRole(kc: KubeConfig, namespace: string, name: string, rules: V1PolicyRule[]): Promise<void> {
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createNamespacedRole({ namespace, body: { metadata: { name }, rules } });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace }],
    },
  });
}

/**
 * Binds the chart's aggregated `edit` ClusterRole to the namespace's ServiceAccount `name`: a
 * tenant exactly as a platform team makes one.
 */
export async function grantEditRole(kc: KubeConfig, namespace: string, name: string): Promise<void> {
  await kc.makeApiClient(RbacAuthorizationV1Api).createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: `${name}-edit` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'edit' },
      subjects: [{ kind: 'ServiceAccount', name, namespace }],
    },
  });
}
