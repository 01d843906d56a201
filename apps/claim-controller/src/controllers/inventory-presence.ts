import type { ReconcileRequest } from '@sandbox-scale/kube-runtime';
import type { NodeInventory, SandboxClaim } from '@sandbox-scale/scale-core';
import { boundClaimId, boundConditionTrue } from '../record/claim-status';

/**
 * The sandbox ids a node's inventory lists, over all of its objects (the node's own and its
 * `<node>.part-N`). Undefined when the objects at hand do not make the whole node (its own object
 * missing, or fewer parts than it announces: a split being published) or an entry carries no id:
 * then nothing can be called missing from it.
 */
export function inventoryIds(objects: readonly NodeInventory[]): ReadonlySet<string> | undefined {
  const own = objects.find((o) => o.part === undefined || o.part === 0);
  if (own === undefined) return undefined;
  const parts = own.parts ?? 1;
  const seen = new Set(objects.map((o) => o.part ?? 0).filter((p) => p < parts));
  if (seen.size < parts) return undefined;
  const ids = new Set<string>();
  for (const o of objects) {
    if ((o.part ?? 0) >= parts) continue; // a part left over from a larger split
    for (const e of o.entries ?? []) {
      if (!e.id) return undefined;
      ids.add(e.id);
    }
  }
  return ids;
}

/** The claims (ns/name -> node claim id) of `bound` whose id `ids` does not list. */
export function claimsMissingFrom(bound: ReadonlyMap<string, string>, ids: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (const [key, id] of bound) if (!ids.has(id)) out.push(key);
  return out;
}

/**
 * The Bound claims by node (kept from the claim cache's events), so a node's inventory is
 * compared with that node's claims only, and the claims an inventory showed missing: the
 * reconcile of such a claim asks its node once whether the sandbox is still there. An
 * inventory may lag the bind by one publish, so its word alone never marks a claim lost.
 */
export class BoundClaimsByNode {
  readonly #byNode = new Map<string, Map<string, string>>();
  readonly #nodeOf = new Map<string, string>();
  readonly #suspects = new Map<string, string>();

  /** A claim added or changed in the cache. */
  observe(claim: SandboxClaim): void {
    const key = keyOf(claim);
    const node = claim.status?.sandbox?.nodeName ?? '';
    const id = boundClaimId(claim);
    this.#drop(key);
    if (node === '' || id === '' || claim.metadata.deletionTimestamp || !boundConditionTrue(claim)) {
      this.#suspects.delete(key);
      return;
    }
    let claims = this.#byNode.get(node);
    if (claims === undefined) this.#byNode.set(node, (claims = new Map()));
    claims.set(key, id);
    this.#nodeOf.set(key, node);
  }

  /** A claim gone from the cache. */
  forget(claim: SandboxClaim): void {
    this.#drop(keyOf(claim));
    this.#suspects.delete(keyOf(claim));
  }

  /** The Bound claims of `node` whose id `objects` (all of the node's inventory objects) does not list; each is marked for a check. */
  missingFrom(node: string, objects: readonly NodeInventory[]): ReconcileRequest[] {
    const claims = this.#byNode.get(node);
    if (claims === undefined || claims.size === 0) return [];
    const ids = inventoryIds(objects);
    if (ids === undefined) return [];
    return claimsMissingFrom(claims, ids).map((key) => {
      this.#suspects.set(key, claims.get(key) ?? '');
      const slash = key.indexOf('/');
      return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
    });
  }

  /** Whether an inventory showed the claim's sandbox `id` missing since the last ask; the mark is consumed. */
  takeSuspect(key: string, id: string): boolean {
    const marked = this.#suspects.get(key);
    this.#suspects.delete(key);
    return marked !== undefined && marked === id;
  }

  /** Claims indexed (a figure for leak checks). */
  get size(): number {
    return this.#nodeOf.size;
  }

  #drop(key: string): void {
    const node = this.#nodeOf.get(key);
    if (node === undefined) return;
    this.#nodeOf.delete(key);
    const claims = this.#byNode.get(node);
    claims?.delete(key);
    if (claims?.size === 0) this.#byNode.delete(node);
  }
}

function keyOf(c: SandboxClaim): string {
  return `${c.metadata.namespace ?? ''}/${c.metadata.name ?? ''}`;
}
