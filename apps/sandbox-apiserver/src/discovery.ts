import { createHash } from 'node:crypto';
import { API_VERSION, RESOURCE_CATEGORY, RESOURCES, SANDBOX_API_VERSION, SANDBOX_GROUP } from '@sandbox-scale/scale-core';
import { dataPlaneVerbs } from './data-plane/subresources';

/**
 * Lifecycle actions served as POST subresources, and the kind each answers with. `read` marks
 * the two that only read: served as GET too (verb `get`, which the view role grants), and as
 * POST for clients written when they were POST only.
 */
export const ACTIONS = [
  { name: 'pause', kind: 'SandboxPauseOptions' },
  { name: 'resume', kind: 'SandboxResumeOptions' },
  { name: 'fork', kind: 'SandboxForkResult' },
  { name: 'snapshot', kind: 'SandboxSnapshotResult' },
  // the sandbox's checkpoints: list, delete one, claim a new sandbox from one (storage/snapshot-storage.ts)
  { name: 'snapshots', kind: 'SandboxSnapshotList', read: true },
  { name: 'deletesnapshot', kind: 'SandboxDeleteSnapshotResult' },
  { name: 'claimsnapshot', kind: 'Sandbox' },
  { name: 'promote', kind: 'SandboxPromoteResult' },
  { name: 'stats', kind: 'SandboxStats', read: true },
] as const;

/** The subresources of sandboxes a GET reads: stats and snapshots. */
export const READ_ACTIONS: ReadonlySet<string> = new Set(ACTIONS.filter((a) => 'read' in a && a.read).map((a) => a.name));

export function isReadAction(subresource: string): boolean {
  return READ_ACTIONS.has(subresource);
}

/**
 * The data plane of a sandbox (data-plane/): exec, its files and its ports, with the verbs RBAC
 * grants them by and the kind each answers (portforward answers an upgrade, described by its options).
 */
export const DATA_PLANE = [
  { name: 'exec', kind: 'SandboxExecResult', verbs: dataPlaneVerbs('exec') },
  { name: 'files', kind: 'SandboxFileInfo', verbs: dataPlaneVerbs('files') },
  { name: 'portforward', kind: 'SandboxPortForwardOptions', verbs: dataPlaneVerbs('portforward') },
] as const;

/** Every subresource of sandboxes: the lifecycle actions (POST, so `create`; the reads GET too) and the data plane. */
const SUBRESOURCES: readonly { name: string; kind: string; verbs: readonly string[] }[] = [
  ...ACTIONS.map((a) => ({ name: a.name, kind: a.kind, verbs: isReadAction(a.name) ? ['create', 'get'] : ['create'] })),
  ...DATA_PLANE,
];

const SB = RESOURCES.sandbox;
/** Only verbs fully implemented: controllers choose resources by verb. */
const VERBS = ['create', 'delete', 'get', 'list', 'patch', 'watch'];
const GROUP_VERSION = { groupVersion: SANDBOX_API_VERSION, version: API_VERSION };

export function apiGroup(): Record<string, unknown> {
  return { kind: 'APIGroup', apiVersion: 'v1', name: SANDBOX_GROUP, versions: [GROUP_VERSION], preferredVersion: GROUP_VERSION };
}

export function apiGroupList(): Record<string, unknown> {
  const { kind: _k, apiVersion: _a, ...group } = apiGroup();
  return { kind: 'APIGroupList', apiVersion: 'v1', groups: [group] };
}

export function apiResourceList(): Record<string, unknown> {
  const main = {
    name: SB.plural,
    singularName: SB.singular,
    namespaced: true,
    kind: SB.kind,
    verbs: VERBS,
    shortNames: [...SB.shortNames],
    categories: [RESOURCE_CATEGORY],
  };
  const subs = SUBRESOURCES.map((a) => ({
    name: `${SB.plural}/${a.name}`,
    singularName: '',
    namespaced: true,
    kind: a.kind,
    verbs: [...a.verbs],
  }));
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: SANDBOX_API_VERSION, resources: [main, ...subs] };
}

/** Aggregated discovery (apidiscovery.k8s.io/v2 or v2beta1); responseKind is always set. */
export function apiGroupDiscoveryList(version: 'v2' | 'v2beta1'): Record<string, unknown> {
  const kindOf = (kind: string) => ({ group: SANDBOX_GROUP, version: API_VERSION, kind });
  const resource = {
    resource: SB.plural,
    responseKind: kindOf(SB.kind),
    scope: 'Namespaced',
    singularResource: SB.singular,
    verbs: VERBS,
    shortNames: [...SB.shortNames],
    categories: [RESOURCE_CATEGORY],
    subresources: SUBRESOURCES.map((a) => ({ subresource: a.name, responseKind: kindOf(a.kind), verbs: [...a.verbs] })),
  };
  return {
    kind: 'APIGroupDiscoveryList',
    apiVersion: `apidiscovery.k8s.io/${version}`,
    metadata: {},
    items: [{ metadata: { name: SANDBOX_GROUP }, versions: [{ version: API_VERSION, freshness: 'Current', resources: [resource] }] }],
  };
}

export function etagOf(body: unknown): string {
  return `"${createHash('sha256').update(JSON.stringify(body)).digest('hex').slice(0, 32)}"`;
}
