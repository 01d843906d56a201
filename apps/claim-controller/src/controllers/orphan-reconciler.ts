import { isNotFound, type Logger, type Runnable } from '@sandbox-scale/kube-runtime';
import { CONDITION_TYPES, splitEntryName, type InventoryLike, type SandboxClaim } from '@sandbox-scale/scale-core';
import type { ClaimGateway, NodeDelivery } from '../gateway/claim-gateway';
import type { ClaimRecorder } from '../gateway/claim-recorder';

export interface OrphanReconcilerOptions {
  gateway: ClaimGateway;
  recorder: ClaimRecorder;
  inventories: () => readonly InventoryLike[];
  /** Point Get of one claim (never a LIST). */
  getClaim: (namespace: string, name: string, signal?: AbortSignal) => Promise<SandboxClaim>;
  intervalMs: number;
  log: Logger;
  onItem?: (outcome: 'adopted' | 'bound' | 'missing' | 'error') => void;
}

export interface OrphanPassResult {
  adopted: number;
  errors: number;
}

/**
 * Audit and adopt (scale-contracts §5.6): every live delivery on a node whose claim has no
 * Bound record gets one. A failed item is logged and counted and the pass goes on (the
 * reference aborts, §13.14). It never releases or destroys a VM: a delivery whose claim is
 * gone is left intact for its owner to tear down.
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
      if (outcome === 'adopted') out.adopted++;
      if (outcome === 'error') out.errors++;
    }
    return out;
  }

  async #adopt(d: NodeDelivery, signal?: AbortSignal): Promise<'adopted' | 'bound' | 'missing' | 'error'> {
    const { namespace, name } = splitEntryName(d.claimRef);
    const log = { namespace, name, node: d.assignment.node, sandboxId: d.assignment.claimId };
    try {
      const claim = await this.o.getClaim(namespace, name, signal);
      const current = claim.status?.sandbox?.name ?? '';
      const hasBound = claim.status?.conditions?.some((c) => c.type === CONDITION_TYPES.bound) ?? false;
      if (current !== '' && (current !== d.assignment.claimId || hasBound)) return 'bound';
      await this.o.recorder.recordBound({ namespace, name }, d.assignment, signal, true);
      this.o.log.info(log, 'adopted an orphaned delivery');
      return 'adopted';
    } catch (err) {
      if (isNotFound(err)) {
        this.o.log.debug(log, 'delivery has no claim object; leaving the VM intact');
        return 'missing';
      }
      this.o.log.warn({ ...log, err }, 'orphan adoption failed; continuing the pass');
      return 'error';
    }
  }
}
