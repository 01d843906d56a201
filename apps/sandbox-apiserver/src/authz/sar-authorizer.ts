import type { KubeConfig } from '@kubernetes/client-node';
import { kubeRequest } from '@sandbox-scale/kube-runtime';
import { API_VERSION, SANDBOX_GROUP } from '@sandbox-scale/scale-core';
import { z } from 'zod';
import type { UserInfo } from '../authn/user-info';
import type { RequestInfo } from '../http/request-info';

export interface Decision {
  readonly allowed: boolean;
  readonly reason: string;
}

const SarSchema = z.object({ status: z.object({ allowed: z.boolean().optional(), denied: z.boolean().optional(), reason: z.string().optional() }).optional() });

const MASTERS = 'system:masters';

/** The review's spec: resource attributes for sandboxes, non-resource ones for the rest. */
export function sarSpecOf(user: UserInfo, info: RequestInfo): Record<string, unknown> {
  const who = { user: user.username, ...(user.uid ? { uid: user.uid } : {}), groups: user.groups, extra: user.extra };
  if (!info.isResource) return { ...who, nonResourceAttributes: { path: info.path, verb: info.verb } };
  const attrs = { namespace: info.namespace, verb: info.verb, group: SANDBOX_GROUP, version: API_VERSION, resource: info.resource, subresource: info.subresource, name: info.name };
  return { ...who, resourceAttributes: attrs };
}

/**
 * Delegated authorization (k8s-api.md §4.5): a SubjectAccessReview per distinct question,
 * allow and deny cached 10 s; transport failures are never cached and propagate (-> 500),
 * so a broken authorizer never allows.
 */
export class SarAuthorizer {
  readonly #cache = new Map<string, { decision: Decision; expires: number }>();
  constructor(
    private readonly kc: KubeConfig,
    private readonly ttlMs = 10_000,
  ) {}

  async authorize(user: UserInfo, info: RequestInfo): Promise<Decision> {
    if (user.groups.includes(MASTERS)) return { allowed: true, reason: '' };
    const spec = sarSpecOf(user, info);
    const key = JSON.stringify(spec);
    const now = Date.now();
    const hit = this.#cache.get(key);
    if (hit !== undefined && hit.expires > now) return hit.decision;
    const raw = await kubeRequest(this.kc, {
      method: 'POST',
      path: '/apis/authorization.k8s.io/v1/subjectaccessreviews',
      body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec },
      signal: AbortSignal.timeout(10_000),
    });
    const status = SarSchema.parse(raw).status;
    const decision = { allowed: status?.allowed === true && status.denied !== true, reason: status?.reason ?? '' };
    if (this.#cache.size > 10_000) this.#cache.clear();
    this.#cache.set(key, { decision, expires: now + this.ttlMs });
    return decision;
  }
}
