/**
 * The most replicas the driver keeps warm for one pool and for one namespace's pools together
 * (--max-replicas-per-pool, --max-replicas-per-namespace; 0 = no limit). Without them any
 * namespace editor could set spec.replicas to millions and take every node's warm capacity.
 */
export interface ReplicaLimits {
  perPool: number;
  perNamespace: number;
}

export const NO_REPLICA_LIMITS: ReplicaLimits = { perPool: 0, perNamespace: 0 };

/** What the allotment reads of a pool: its identity, its age and what it asks for. */
export interface LimitedPool {
  /** `<namespace>/<name>`. */
  id: string;
  namespace: string;
  name: string;
  /** metadata.creationTimestamp (RFC 3339, as the API server writes it); absent sorts last. */
  createdAt?: string | null;
  /** spec.replicas. */
  replicas: number;
}

/** Which limit holds a pool below its spec.replicas. */
export type LimitedBy = 'pool' | 'namespace';

export interface ReplicaAllotment {
  /** spec.replicas. */
  requested: number;
  /** What the nodes are asked to keep warm: never more than either limit allows. */
  target: number;
  /** Absent: the pool gets all it asks for. */
  limitedBy?: LimitedBy;
  limits: ReplicaLimits;
  /** Replicas the pools of the namespace ahead of this one were allotted (the namespace limit goes to them first). */
  takenBefore: number;
}

const capOf = (limit: number, n: number): number => (limit > 0 ? Math.min(limit, n) : n);
const bySortKey = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
// U+FFFF sorts after every RFC 3339 timestamp: a pool without one is last in line.
const LAST = '\uffff';

/**
 * Each pool's warm target under the limits (pure). Within a namespace the pools are served
 * oldest first (creation time, then name), each up to the per-pool limit, until the namespace
 * limit is used up: so every sync agrees, a pool created or scaled up later never takes replicas
 * already kept warm for an older one, and deleting or shrinking a pool hands its share on.
 */
export function allotReplicas(pools: readonly LimitedPool[], limits: ReplicaLimits): Map<string, ReplicaAllotment> {
  const byNamespace = new Map<string, LimitedPool[]>();
  for (const p of pools) {
    const list = byNamespace.get(p.namespace);
    if (list) list.push(p);
    else byNamespace.set(p.namespace, [p]);
  }
  const out = new Map<string, ReplicaAllotment>();
  for (const list of byNamespace.values()) {
    list.sort((a, b) => bySortKey(a.createdAt || LAST, b.createdAt || LAST) || bySortKey(a.name, b.name));
    let taken = 0;
    for (const p of list) {
      const requested = Math.max(0, Math.floor(p.replicas));
      const capped = capOf(limits.perPool, requested);
      const target = limits.perNamespace > 0 ? Math.min(capped, Math.max(0, limits.perNamespace - taken)) : capped;
      const limitedBy: LimitedBy | undefined = target < capped ? 'namespace' : capped < requested ? 'pool' : undefined;
      out.set(p.id, { requested, target, limits, takenBefore: taken, ...(limitedBy ? { limitedBy } : {}) });
      taken += target;
    }
  }
  return out;
}
