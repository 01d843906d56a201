/**
 * Where a resource lives in the API: enough to build every URL the runtime needs without
 * discovery. Core resources have group ''.
 */
export interface KubeResource {
  readonly group: string;
  readonly version: string;
  /** Lower-case plural as in the URL (`configmaps`, `sandboxwarmpools`). */
  readonly plural: string;
  readonly kind: string;
  readonly namespaced: boolean;
}

export function apiVersionOf(res: Pick<KubeResource, 'group' | 'version'>): string {
  return res.group === '' ? res.version : `${res.group}/${res.version}`;
}

/** `group/version/plural`, the label used in logs, metrics and readiness check names. */
export function resourceName(res: KubeResource): string {
  return res.group === '' ? res.plural : `${res.plural}.${res.group}`;
}

export interface PathOptions {
  namespace?: string;
  name?: string;
  subresource?: string;
}

/** The URL path of a collection (no name) or of one object, optionally of its subresource. */
export function resourcePath(res: KubeResource, opts: PathOptions = {}): string {
  const root = res.group === '' ? `/api/${res.version}` : `/apis/${res.group}/${res.version}`;
  const ns = res.namespaced && opts.namespace ? `/namespaces/${encodeURIComponent(opts.namespace)}` : '';
  let path = `${root}${ns}/${res.plural}`;
  if (opts.name !== undefined) path += `/${encodeURIComponent(opts.name)}`;
  if (opts.subresource !== undefined) path += `/${opts.subresource}`;
  return path;
}

export const SecretResource: KubeResource = { group: '', version: 'v1', plural: 'secrets', kind: 'Secret', namespaced: true };
export const APIServiceResource: KubeResource = {
  group: 'apiregistration.k8s.io',
  version: 'v1',
  plural: 'apiservices',
  kind: 'APIService',
  namespaced: false,
};
export const ConfigMapResource: KubeResource = { group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap', namespaced: true };
export const NamespaceResource: KubeResource = { group: '', version: 'v1', plural: 'namespaces', kind: 'Namespace', namespaced: false };
export const LeaseResource: KubeResource = {
  group: 'coordination.k8s.io',
  version: 'v1',
  plural: 'leases',
  kind: 'Lease',
  namespaced: true,
};
export const EventResource: KubeResource = { group: 'events.k8s.io', version: 'v1', plural: 'events', kind: 'Event', namespaced: true };
export const CrdResource: KubeResource = {
  group: 'apiextensions.k8s.io',
  version: 'v1',
  plural: 'customresourcedefinitions',
  kind: 'CustomResourceDefinition',
  namespaced: false,
};
