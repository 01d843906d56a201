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

/** The POST lifecycle subresources sandbox-apiserver serves under `sandboxes/{name}/…` (k8s-api.md §4.12). */
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

export function act(
  kc: KubeConfig,
  o: { namespace: string; name: string; action: SandboxAction; options?: Record<string, unknown>; signal?: AbortSignal },
): Promise<unknown> {
  const body = { apiVersion: SANDBOX_API_VERSION, kind: OPTION_KINDS[o.action], ...(o.options ?? {}) };
  return call(
    kc,
    { method: 'POST', path: `${sandboxesPath(o.namespace, o.name)}/${o.action}`, body, signal: o.signal },
    { verb: 'create', resource: `sandboxes/${o.action}`, group: SANDBOX_GROUP, namespace: o.namespace, name: o.name },
  );
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
