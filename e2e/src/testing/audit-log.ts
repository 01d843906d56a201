import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { ChartApp } from './chart-rbac';

/** The fields of an audit.k8s.io/v1 Event that say who did what and how it was answered (level Metadata and up). */
export const AuditEventSchema = z.object({
  auditID: z.string(),
  stage: z.string(),
  requestURI: z.string(),
  verb: z.string(),
  user: z.object({ username: z.string().optional() }),
  objectRef: z
    .object({
      apiGroup: z.string().optional(),
      resource: z.string().optional(),
      subresource: z.string().optional(),
      namespace: z.string().optional(),
      name: z.string().optional(),
    })
    .optional(),
  responseStatus: z.object({ code: z.number().optional(), message: z.string().optional() }).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
  requestReceivedTimestamp: z.string(),
});
export type AuditEvent = z.infer<typeof AuditEventSchema>;

/** One request as RBAC authorized it. */
export interface ApiUse {
  user: string;
  /** '' for the core group. */
  apiGroup: string;
  /** `resource` or `resource/subresource`; for a non-resource request, its path. */
  resource: string;
  nonResource: boolean;
  /** The verb RBAC checked: get/list/watch from the request's shape, patch for any patch (apply too). */
  verb: string;
  /** Undefined: a cluster-wide request (a cluster-scoped resource, or every namespace). */
  namespace?: string;
  name?: string;
  code: number;
  /** Refused: RBAC said forbid, or the answer was 403 (an admission policy). */
  denied: boolean;
  requestURI: string;
  at: string;
}

/**
 * The events of an audit log (JSON lines). The log is read while kube-apiserver writes it, so a
 * last line without its end is left for the next read; any other line that is not an event is an error.
 */
export function readAuditLog(path: string): AuditEvent[] {
  const lines = readFileSync(path, 'utf8').split('\n');
  const complete = lines.slice(0, -1);
  return complete.filter((l) => l.trim() !== '').map((l) => AuditEventSchema.parse(JSON.parse(l)));
}

/**
 * The requests of `users` in `events`, one per request (a watch logs ResponseStarted and later
 * ResponseComplete; the first of its events counts). kube-apiserver's audit verb is already
 * RBAC's: `list` or `watch` for a collection read, `patch` for every patch type, server-side
 * apply included. A server-side apply that created its object (201) was also authorized as
 * `create` (the patch handler asks for it before creating), so it adds a create use.
 */
export function apiUses(events: AuditEvent[], users: ReadonlySet<string>, since?: string): ApiUse[] {
  const seen = new Set<string>();
  const out: ApiUse[] = [];
  for (const e of events) {
    const user = e.user.username ?? '';
    if (!users.has(user) || seen.has(e.auditID) || e.stage === 'RequestReceived') continue;
    if (since !== undefined && e.requestReceivedTimestamp < since) continue;
    seen.add(e.auditID);
    const code = e.responseStatus?.code ?? 0;
    const denied = e.annotations?.['authorization.k8s.io/decision'] === 'forbid' || code === 403;
    const ref = e.objectRef;
    const base = { user, code, denied, requestURI: e.requestURI, at: e.requestReceivedTimestamp };
    if (!ref?.resource) {
      out.push({ ...base, apiGroup: '', resource: e.requestURI.split('?')[0] ?? '', nonResource: true, verb: e.verb });
      continue;
    }
    const use: ApiUse = {
      ...base,
      apiGroup: ref.apiGroup ?? '',
      resource: ref.subresource ? `${ref.resource}/${ref.subresource}` : ref.resource,
      nonResource: false,
      verb: e.verb,
      ...(ref.namespace ? { namespace: ref.namespace } : {}),
      ...(ref.name ? { name: ref.name } : {}),
    };
    out.push(use);
    if (use.verb === 'patch' && code === 201) out.push({ ...use, verb: 'create' });
  }
  return out;
}

/** `group/resource verb (namespace|cluster)`: how a use or a grant is named in the suites' tables. */
export function useLabel(u: Pick<ApiUse, 'apiGroup' | 'resource' | 'verb' | 'namespace' | 'nonResource'>): string {
  if (u.nonResource) return `${u.resource} ${u.verb}`;
  return `${u.apiGroup || 'core'}/${u.resource} ${u.verb} (${u.namespace ?? 'cluster'})`;
}

const CHART_APPS: readonly ChartApp[] = ['claim-controller', 'warmpool-driver', 'inventory-publisher', 'sandbox-apiserver'];

/** The user kube-apiserver sees for each app's chart ServiceAccount (`<release>-<app>`, the chart's names for release `sandbox-scale`). */
export function chartServiceAccountUsers(namespace: string, release: string, publisherNamespace = namespace): Map<ChartApp, string> {
  const fullname = release.includes('sandbox-scale') ? release : `${release}-sandbox-scale`;
  return new Map(
    CHART_APPS.map((app) => [
      app,
      `system:serviceaccount:${app === 'inventory-publisher' ? publisherNamespace : namespace}:${`${fullname}-${app}`.slice(0, 63).replace(/-+$/, '')}`,
    ]),
  );
}
