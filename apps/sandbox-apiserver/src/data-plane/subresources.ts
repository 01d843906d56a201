/**
 * The data-plane subresources of `sandboxes`, the kind each answers, the methods each serves and
 * the RBAC verb each method is authorized as. Whatever runs in the guest or changes it is
 * `create` (an exec, a write, a port-forward even when its upgrade is a GET, as kubelet's exec and
 * port-forward are), a read is `get`, a delete `delete`.
 */
export const DATA_PLANE_SUBRESOURCES = {
  exec: { kind: 'SandboxExecResult', verbs: { POST: 'create' } },
  files: { kind: 'SandboxFileInfo', verbs: { GET: 'get', PUT: 'create', DELETE: 'delete' } },
  portforward: { kind: 'Status', verbs: { GET: 'create', POST: 'create' } },
} as const satisfies Record<string, { kind: string; verbs: Record<string, string> }>;
export type DataPlaneSubresource = keyof typeof DATA_PLANE_SUBRESOURCES;

export function isDataPlaneSubresource(sub: string): sub is DataPlaneSubresource {
  return Object.hasOwn(DATA_PLANE_SUBRESOURCES, sub);
}

/** The RBAC verb of a data-plane request; undefined for a method the subresource does not serve. */
export function dataPlaneVerb(sub: DataPlaneSubresource, method: string): string | undefined {
  const verbs: Record<string, string> = DATA_PLANE_SUBRESOURCES[sub].verbs;
  return Object.hasOwn(verbs, method) ? verbs[method] : undefined;
}

/**
 * kube-apiserver's own verb for a method (it authorizes every request before it proxies it here):
 * a PUT is `update` and a GET `get` to it, whatever this server asks.
 */
const KUBE_APISERVER_VERBS: Record<string, string> = { GET: 'get', POST: 'create', PUT: 'update', DELETE: 'delete' };

/**
 * The verbs discovery advertises for each: every verb a request of it is authorized by, here and
 * by kube-apiserver in front, so a role granting them all lets every served method through.
 */
export function dataPlaneVerbs(sub: DataPlaneSubresource): string[] {
  const verbs = DATA_PLANE_SUBRESOURCES[sub].verbs;
  const all = Object.entries(verbs).flatMap(([method, verb]) => [verb, KUBE_APISERVER_VERBS[method] ?? verb]);
  return [...new Set(all)].sort();
}

const DATA_PLANE_TARGET = /^\/apis\/agents\.x-k8s\.io\/v1beta1\/namespaces\/[^/]+\/sandboxes\/[^/]+\/(exec|files|portforward)(\?|$)/;

/** Whether a request target names a data-plane subresource (for log levels; authorization reads the parsed RequestInfo). */
export function isDataPlaneTarget(target: string | undefined): boolean {
  return DATA_PLANE_TARGET.test(target ?? '');
}
