import type { KubeConfig } from '@kubernetes/client-node';
import { kubeRequest, type KubeRequest } from '@sandbox-scale/kube-runtime';
import { EXTENSIONS_API_VERSION, EXTENSIONS_GROUP, SANDBOX_API_VERSION, SANDBOX_GROUP } from '@sandbox-scale/scale-core';
import { toSdkError, type RequestTarget } from './errors';

/** One API call through kube-runtime's transport, its failure turned into a typed error naming the request. */
export async function call(kc: KubeConfig, req: KubeRequest, target: RequestTarget): Promise<unknown> {
  try {
    return await kubeRequest(kc, req);
  } catch (err) {
    throw toSdkError(err, target, req.signal);
  }
}

const ns = (namespace: string): string => `/namespaces/${encodeURIComponent(namespace)}`;
export const claimsPath = (namespace: string, name?: string): string =>
  `/apis/${EXTENSIONS_API_VERSION}${ns(namespace)}/sandboxclaims${name ? `/${encodeURIComponent(name)}` : ''}`;
export const sandboxesPath = (namespace: string, name?: string): string =>
  `/apis/${SANDBOX_API_VERSION}${ns(namespace)}/sandboxes${name ? `/${encodeURIComponent(name)}` : ''}`;

/** The lifecycle subresources sandbox-apiserver serves under `sandboxes/{name}/…`. */
export type SandboxAction =
  'pause' | 'resume' | 'fork' | 'snapshot' | 'snapshots' | 'deletesnapshot' | 'claimsnapshot' | 'promote' | 'stats';

/** The options kind each action accepts; sent so the server can refuse a body meant for another action. */
const OPTION_KINDS: Record<SandboxAction, string> = {
  pause: 'SandboxPauseOptions',
  resume: 'SandboxResumeOptions',
  fork: 'SandboxForkOptions',
  snapshot: 'SandboxSnapshotOptions',
  snapshots: 'SandboxSnapshotsOptions',
  deletesnapshot: 'SandboxDeleteSnapshotOptions',
  claimsnapshot: 'SandboxClaimSnapshotOptions',
  promote: 'SandboxPromoteOptions',
  stats: 'SandboxStatsOptions',
};

/** The actions that only read, sent as GET (RBAC verb `get`, which the view role grants); the rest are POST (`create`). */
const READS: ReadonlySet<SandboxAction> = new Set(['stats', 'snapshots']);

export function act(
  kc: KubeConfig,
  o: { namespace: string; name: string; action: SandboxAction; options?: Record<string, unknown>; signal?: AbortSignal },
): Promise<unknown> {
  const path = `${sandboxesPath(o.namespace, o.name)}/${o.action}`;
  const target = { resource: `sandboxes/${o.action}`, group: SANDBOX_GROUP, namespace: o.namespace, name: o.name };
  if (READS.has(o.action)) return call(kc, { method: 'GET', path, signal: o.signal }, { verb: 'get', ...target });
  const body = { apiVersion: SANDBOX_API_VERSION, kind: OPTION_KINDS[o.action], ...(o.options ?? {}) };
  return call(kc, { method: 'POST', path, body, signal: o.signal }, { verb: 'create', ...target });
}

export const claimTarget = (verb: string, namespace: string, name?: string): RequestTarget => ({
  verb,
  resource: 'sandboxclaims',
  group: EXTENSIONS_GROUP,
  namespace,
  ...(name ? { name } : {}),
});
export const sandboxTarget = (verb: string, namespace: string, name?: string): RequestTarget => ({
  verb,
  resource: 'sandboxes',
  group: SANDBOX_GROUP,
  namespace,
  ...(name ? { name } : {}),
});
