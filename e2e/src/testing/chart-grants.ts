import { RbacAuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { REPO_ROOT } from '../system/app-process';
import type { ApiUse } from './audit-log';
import { runTool } from './cluster';

const RuleSchema = z.object({
  apiGroups: z.array(z.string()).optional(),
  resources: z.array(z.string()).optional(),
  resourceNames: z.array(z.string()).optional(),
  nonResourceURLs: z.array(z.string()).optional(),
  verbs: z.array(z.string()),
});
type Rule = z.infer<typeof RuleSchema>;

const RoleSchema = z.object({
  kind: z.enum(['Role', 'ClusterRole']),
  metadata: z.object({ name: z.string(), namespace: z.string().optional() }),
  rules: z.array(RuleSchema).nullish(),
});

const BindingSchema = z.object({
  kind: z.enum(['RoleBinding', 'ClusterRoleBinding']),
  metadata: z.object({ name: z.string(), namespace: z.string().optional() }),
  roleRef: z.object({ kind: z.enum(['Role', 'ClusterRole']), name: z.string() }),
  subjects: z.array(z.object({ kind: z.string(), name: z.string(), namespace: z.string().optional() })).nullish(),
});

/**
 * One verb on one resource (or non-resource path) that a binding of the chart gives a
 * ServiceAccount: what an ApiUse is matched against. `namespace` undefined: cluster-wide (a
 * ClusterRoleBinding).
 */
export interface Grant extends Pick<ApiUse, 'user' | 'apiGroup' | 'resource' | 'nonResource' | 'verb' | 'namespace'> {
  resourceNames?: string[];
  /** `<binding kind>/<name> -> <role kind>/<name>`. */
  source: string;
}

/**
 * The chart's RBAC objects as `helm template` renders them for `release` in `namespace` with
 * `args` (the values the system under test was installed with, e.g. `--set k=v`).
 */
export async function renderChartRbac(opts: { release: string; namespace: string; args?: string[] }): Promise<unknown[]> {
  const r = await runTool('helm', [
    'template',
    opts.release,
    join(REPO_ROOT, 'charts/sandbox-scale'),
    '--namespace',
    opts.namespace,
    ...(opts.args ?? []),
  ]);
  if (r.code !== 0) throw new Error(`helm template: ${r.stderr}`);
  return parseAllDocuments(r.stdout)
    .map((d) => d.toJSON() as unknown)
    .filter((d): d is { kind: string } => typeof d === 'object' && d !== null && 'kind' in d)
    .filter((d) => ['Role', 'ClusterRole', 'RoleBinding', 'ClusterRoleBinding'].includes(d.kind));
}

/**
 * Every grant the rendered bindings give the ServiceAccounts of `namespaces`, one per verb and
 * resource. A binding may name a role the chart does not ship (system:auth-delegator,
 * extension-apiserver-authentication-reader): that one is read from the cluster `kc`.
 */
export async function chartGrants(kc: KubeConfig, rendered: unknown[], namespaces: readonly string[]): Promise<Grant[]> {
  const roles = new Map<string, Rule[]>();
  const bindings: z.infer<typeof BindingSchema>[] = [];
  for (const d of rendered) {
    const role = RoleSchema.safeParse(d);
    if (role.success)
      roles.set(`${role.data.kind}/${role.data.metadata.namespace ?? ''}/${role.data.metadata.name}`, role.data.rules ?? []);
    const binding = BindingSchema.safeParse(d);
    if (binding.success) bindings.push(binding.data);
  }
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  const rulesOf = async (kind: 'Role' | 'ClusterRole', name: string, ns: string | undefined): Promise<Rule[]> => {
    const key = `${kind}/${kind === 'Role' ? (ns ?? '') : ''}/${name}`;
    const known = roles.get(key);
    if (known) return known;
    const live =
      kind === 'ClusterRole' ? await rbac.readClusterRole({ name }) : await rbac.readNamespacedRole({ name, namespace: ns ?? '' });
    const rules = z.array(RuleSchema).parse(live.rules ?? []);
    roles.set(key, rules);
    return rules;
  };
  const out: Grant[] = [];
  for (const b of bindings) {
    const users = (b.subjects ?? []).flatMap((s) => {
      const ns = s.namespace ?? b.metadata.namespace ?? '';
      return s.kind === 'ServiceAccount' && namespaces.includes(ns) ? [`system:serviceaccount:${ns}:${s.name}`] : [];
    });
    if (users.length === 0) continue;
    const scope = b.kind === 'RoleBinding' ? b.metadata.namespace : undefined;
    const source = `${b.kind}/${b.metadata.name} -> ${b.roleRef.kind}/${b.roleRef.name}`;
    for (const rule of await rulesOf(b.roleRef.kind, b.roleRef.name, b.metadata.namespace))
      for (const user of users) out.push(...grantsOfRule(rule, { user, scope, source }));
  }
  return out;
}

/** One rule of a role bound to `user`, one grant per verb and resource (or non-resource URL). */
function grantsOfRule(rule: Rule, to: { user: string; scope: string | undefined; source: string }): Grant[] {
  const { user, scope, source } = to;
  return rule.verbs.flatMap((verb) => [
    ...(rule.nonResourceURLs ?? []).map((path): Grant => ({ user, apiGroup: '', resource: path, nonResource: true, verb, source })),
    ...(rule.apiGroups ?? []).flatMap((apiGroup) =>
      (rule.resources ?? []).map((resource): Grant => ({
        user,
        apiGroup,
        resource,
        nonResource: false,
        verb,
        ...(scope !== undefined ? { namespace: scope } : {}),
        ...(rule.resourceNames?.length ? { resourceNames: rule.resourceNames } : {}),
        source,
      })),
    ),
  ]);
}

const wild = (granted: string, asked: string): boolean => granted === '*' || granted === asked;

/** Whether `grant` authorizes `use`, as RBAC matches a rule (wildcards, resourceNames, a Role's namespace). */
export function grantCovers(grant: Grant, use: ApiUse): boolean {
  if (grant.user !== use.user || grant.nonResource !== use.nonResource || !wild(grant.verb, use.verb)) return false;
  if (grant.nonResource)
    return grant.resource === use.resource || (grant.resource.endsWith('*') && use.resource.startsWith(grant.resource.slice(0, -1)));
  if (!wild(grant.apiGroup, use.apiGroup) || !wild(grant.resource, use.resource)) return false;
  if (grant.namespace !== undefined && grant.namespace !== use.namespace) return false;
  return grant.resourceNames === undefined || (use.name !== undefined && grant.resourceNames.includes(use.name));
}
