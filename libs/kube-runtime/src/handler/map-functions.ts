import type { KubeObject } from '../client/object-meta';
import type { ReconcileRequest } from '../reconcile/reconciler';

/** Object -> the requests it should wake. */
export type MapFunction<T> = (obj: T) => ReconcileRequest[];

/** The object itself (what for() uses). */
export function enqueueObject<T extends KubeObject>(): MapFunction<T> {
  return (obj) => {
    const name = obj.metadata?.name;
    return name ? [{ namespace: obj.metadata?.namespace ?? '', name }] : [];
  };
}

/**
 * The controlling owner of the given kind (what owns() uses). Owners of a namespaced object
 * live in its namespace; a cluster-scoped owner is asked for with clusterScopedOwner.
 */
export function enqueueOwner<T extends KubeObject>(
  ownerKind: string,
  opts: { apiGroup?: string; clusterScopedOwner?: boolean } = {},
): MapFunction<T> {
  return (obj) =>
    (obj.metadata?.ownerReferences ?? [])
      .filter((r) => r.controller === true && r.kind === ownerKind)
      .filter((r) => opts.apiGroup === undefined || groupOf(r.apiVersion) === opts.apiGroup)
      .map((r) => ({ namespace: opts.clusterScopedOwner ? '' : (obj.metadata?.namespace ?? ''), name: r.name }));
}

function groupOf(apiVersion: string): string {
  const i = apiVersion.indexOf('/');
  return i === -1 ? '' : apiVersion.slice(0, i);
}
