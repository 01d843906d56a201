import { isNotFound, type Logger, type Runnable } from '@sandbox-scale/kube-runtime';
import { CONDITION_TYPES, OWNER_KINDS, parseOwnerRef, type InventoryLike, type PoolKey, type SandboxClaim, type SandboxOwner } from '@sandbox-scale/scale-core';
import type { ClaimGateway, NodeDelivery } from '../gateway/claim-gateway';
import type { ClaimRecorder } from '../gateway/claim-recorder';
import { isClaimOfDelivery, type FastPathRecorder } from '../gateway/fast-path-recorder';

export type OrphanOutcome = 'adopted' | 'created' | 'bound' | 'missing' | 'foreign' | 'error';

export interface OrphanReconcilerOptions {
  gateway: ClaimGateway;
  recorder: ClaimRecorder;
  /** Creates the missing SandboxClaim of a fast-path delivery whose record was never written. */
  fastPath: Pick<FastPathRecorder, 'ensureClaim'>;
  /** The pool of `namespace` whose template has `key` (the created claim's warmPoolRef), if any. */
  poolFor: (namespace: string, key: PoolKey) => string | undefined;
  inventories: () => readonly InventoryLike[];
  /** Point Get of one claim (never a LIST). */
  getClaim: (namespace: string, name: string, signal?: AbortSignal) => Promise<SandboxClaim>;
  intervalMs: number;
  log: Logger;
  onItem?: (outcome: OrphanOutcome) => void;
}

export interface OrphanPassResult {
  adopted: number;
  errors: number;
}

/** warmPoolRef of a fast-path claim re-created for a pool that no longer resolves. */
const UNKNOWN_POOL = 'unknown';

/**
 * Audit and adopt (scale-contracts §5.6): every live delivery on a node whose claim has no
 * Bound record gets one. A failed item is logged and counted and the pass goes on (the
 * reference aborts, §13.14). It never releases or destroys a VM: a delivery whose claim is
 * gone is left intact for its owner to tear down.
 *
 * It acts only on the exact owner a delivery's claim_ref names: a SandboxClaim with that uid,
 * or the claim a fast-path delivery created (its delivery uid). A fast-path delivery whose
 * claim was never written gets one now, so every delivered VM shows in `kubectl get
 * sandboxclaims`. Deliveries of other owners (aggregated-API Sandboxes, fork children,
 * snapshot claims), of legacy `<ns>/<name>` references, or whose name now belongs to another
 * object are `foreign` and left alone.
 */
export class OrphanReconciler implements Runnable {
  readonly name = 'orphan-reconciler';
  constructor(private readonly o: OrphanReconcilerOptions) {}

  async start(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.reconcileAll(signal);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, this.o.intervalMs);
        signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
      });
    }
  }

  /** One pass over every routable node. */
  async reconcileAll(signal?: AbortSignal): Promise<OrphanPassResult> {
    const total: OrphanPassResult = { adopted: 0, errors: 0 };
    for (const inv of this.o.inventories()) {
      if (!inv.address || signal?.aborted) continue;
      const r = await this.reconcileNode(inv, signal);
      total.adopted += r.adopted;
      total.errors += r.errors;
    }
    return total;
  }

  async reconcileNode(inv: InventoryLike, signal?: AbortSignal): Promise<OrphanPassResult> {
    const out: OrphanPassResult = { adopted: 0, errors: 0 };
    let deliveries: NodeDelivery[];
    try {
      deliveries = await this.o.gateway.nodeDeliveries(inv, undefined, signal);
    } catch (err) {
      this.o.log.warn({ err, node: inv.node }, 'orphan pass could not list the node\'s deliveries');
      this.o.onItem?.('error');
      return { adopted: 0, errors: 1 };
    }
    for (const d of deliveries) {
      const outcome = await this.#adopt(d, signal);
      this.o.onItem?.(outcome);
      if (outcome === 'adopted' || outcome === 'created') out.adopted++;
      if (outcome === 'error') out.errors++;
    }
    return out;
  }

  async #adopt(d: NodeDelivery, signal?: AbortSignal): Promise<OrphanOutcome> {
    const owner = parseOwnerRef(d.claimRef);
    if (owner === undefined || owner.kind === 'legacy' || (owner.kind !== OWNER_KINDS.claim && owner.kind !== OWNER_KINDS.fastclaim)) return 'foreign';
    const { namespace, name } = owner;
    const log = { namespace, name, node: d.assignment.node, sandboxId: d.assignment.claimId, ownerKind: owner.kind };
    try {
      let claim: SandboxClaim;
      try {
        claim = await this.o.getClaim(namespace, name, signal);
      } catch (err) {
        if (!isNotFound(err)) throw err;
        if (owner.kind === OWNER_KINDS.claim) {
          this.o.log.debug(log, 'delivery has no claim object; leaving the VM intact');
          return 'missing';
        }
        return await this.#createFastPathClaim(owner, d, signal);
      }
      if (!ownedBy(claim, owner)) {
        this.o.log.warn(log, 'delivery names a claim that is another object of the same name; not adopted');
        return 'foreign';
      }
      const current = claim.status?.sandbox?.name ?? '';
      const hasBound = claim.status?.conditions?.some((c) => c.type === CONDITION_TYPES.bound) ?? false;
      if (current !== '' && (current !== d.assignment.claimId || hasBound)) return 'bound';
      await this.o.recorder.recordBound({ namespace, name, uid: claim.metadata.uid ?? '' }, d.assignment, signal, true);
      this.o.log.info(log, 'adopted an orphaned delivery');
      return 'adopted';
    } catch (err) {
      this.o.log.warn({ ...log, err }, 'orphan adoption failed; continuing the pass');
      return 'error';
    }
  }

  /** The record of a fast-path delivery was never written (RBAC, quota, apiserver down): write it now. */
  async #createFastPathClaim(owner: SandboxOwner, d: NodeDelivery, signal?: AbortSignal): Promise<OrphanOutcome> {
    const warmPool = this.o.poolFor(owner.namespace, d.key) ?? UNKNOWN_POOL;
    const claim = await this.o.fastPath.ensureClaim({ namespace: owner.namespace, name: owner.name, warmPool, deliveryUid: owner.uid }, d.assignment.claimId, signal);
    await this.o.recorder.recordBound({ namespace: owner.namespace, name: owner.name, uid: claim.metadata.uid ?? '' }, d.assignment, signal, true);
    this.o.log.info({ namespace: owner.namespace, name: owner.name, node: d.assignment.node, sandboxId: d.assignment.claimId }, 'created the missing SandboxClaim of a fast-path delivery');
    return 'created';
  }
}

/** Exact ownership: the claim's uid for a SandboxClaim reference, the delivery uid its record carries for a fast-path one. */
function ownedBy(claim: SandboxClaim, owner: SandboxOwner): boolean {
  if (owner.kind === OWNER_KINDS.claim) return claim.metadata.uid === owner.uid;
  return isClaimOfDelivery(claim, owner.uid);
}
