import { isForbidden, isNotFound, LOOP_WAIT, type Logger, type Runnable } from '@sandbox-scale/kube-runtime';
import {
  CONDITION_TYPES,
  OWNER_KINDS,
  parseOwnerRef,
  sleep,
  type InventoryLike,
  type OwnerRefKey,
  type PoolKey,
  type SandboxClaim,
  type SandboxOwner,
} from '@sandbox-scale/scale-core';
import type { ClaimGateway, NodeDelivery } from '../gateway/claim-gateway';
import type { ClaimRecorder } from '../record/claim-recorder';
import { boundClaimId } from '../record/claim-status';
import { isClaimOfDelivery, type FastPathRecorder } from '../record/fast-path-recorder';
import { isClaimOwnerMismatch } from '../record/record-errors';
import type { SecretAccess } from '../record/secret-access';

/**
 * `unproven`: a SandboxClaim or fast-path reference this control plane did not write (no MAC or a
 * wrong one); `not_enabled`: claim-controller may not write the token Secret in its namespace.
 * Both leave the VM and the namespace untouched.
 */
export type OrphanOutcome = 'adopted' | 'created' | 'bound' | 'released' | 'missing' | 'foreign' | 'unproven' | 'not_enabled' | 'error';

export interface OrphanReconcilerOptions {
  gateway: Pick<ClaimGateway, 'listDeliveries' | 'withToken' | 'release'>;
  recorder: Pick<ClaimRecorder, 'recordBoundOn'>;
  /** Creates the missing SandboxClaim of a fast-path delivery whose record was never written. */
  fastPath: Pick<FastPathRecorder, 'ensureClaim'>;
  /** The pool of `namespace` whose template has `key` (the created claim's warmPoolRef), if any. */
  poolFor: (namespace: string, key: PoolKey) => string | undefined;
  inventories: () => readonly InventoryLike[];
  /** The claim as the SandboxClaim informer holds it: what every steady-state decision reads. */
  cachedClaim: (namespace: string, name: string) => SandboxClaim | undefined;
  /** Point Get of one claim from the API server (never a LIST): only to confirm right before adopting. */
  getClaim: (namespace: string, name: string, signal?: AbortSignal) => Promise<SandboxClaim>;
  /** Only references this key proves are acted on; a node or a sandboxd tenant can write any other. */
  refKey: OwnerRefKey;
  /** Whether claim Secrets may be written in a namespace: asked before a claim is created or a token Secret written, as the bind path asks. */
  secretAccess: Pick<SecretAccess, 'check' | 'forget'>;
  intervalMs: number;
  log: Logger;
  onItem?: (outcome: OrphanOutcome) => void;
}

export interface OrphanPassResult {
  adopted: number;
  errors: number;
}

/**
 * What the pass does with one delivery, decided from a claim read (cache or live):
 * - `foreign`: another owner (aggregated-API Sandbox, fork child, snapshot claim, legacy or
 *   unparseable reference), or a claim of the name that is another object; left alone.
 * - `missing`: a SandboxClaim delivery whose claim is gone; the VM is left intact for its owner.
 * - `bound`: the claim already records this sandbox (or, for a fast-path claim, another it keeps).
 * - `duplicate`: the exact SandboxClaim records another sandbox: this VM was handed over under a
 *   reply that never arrived (a timed-out claim) and the claim was bound elsewhere since. Nobody
 *   holds its token, so it is released.
 * - `adopt`: the exact owner exists and records no sandbox: write its Bound record.
 * - `create`: a fast-path delivery whose claim was never written: create it, then record.
 */
export type OrphanDecision = 'foreign' | 'missing' | 'bound' | 'duplicate' | 'adopt' | 'create';

/**
 * Only SandboxClaim and fast-path deliveries have a SandboxClaim to record onto: their owner, or
 * `unproven` when the reference names one but this control plane did not write it.
 */
export function claimOwnerOf(claimRef: string, key: OwnerRefKey): SandboxOwner | 'unproven' | undefined {
  const owner = parseOwnerRef(claimRef, key);
  if (owner === undefined || owner.kind === 'legacy') return undefined;
  if (owner.kind !== OWNER_KINDS.claim && owner.kind !== OWNER_KINDS.fastclaim) return undefined;
  return owner.proven === true ? owner : 'unproven';
}

/** Pure: the decision for a delivery of `owner` (sandbox `sandboxId`) given the claim of its name, if any. */
export function orphanDecision(owner: SandboxOwner, sandboxId: string, claim: SandboxClaim | undefined): OrphanDecision {
  if (claim === undefined) return owner.kind === OWNER_KINDS.fastclaim ? 'create' : 'missing';
  if (!ownedBy(claim, owner)) return 'foreign';
  const current = boundClaimId(claim);
  const hasBound = claim.status?.conditions?.some((c) => c.type === CONDITION_TYPES.bound) ?? false;
  if (current === '') return 'adopt';
  // a fast-path claim is written for one delivery uid, so another sandbox under it is not a lost reply
  if (current !== sandboxId) return owner.kind === OWNER_KINDS.claim ? 'duplicate' : 'bound';
  return hasBound ? 'bound' : 'adopt';
}

/**
 * Audit and adopt: every live delivery on a node whose claim has no Bound record gets one. A
 * failed item is logged and counted and the pass goes on, so one delivery that cannot be
 * recorded never leaves the ones after it unrecorded. A lost record never costs a VM: a delivery whose claim is gone is
 * left intact for its owner to tear down. The one VM it releases is a second delivery for a
 * SandboxClaim that records another (confirmed on the live claim): handed over under a reply
 * that never arrived, its token reached nobody.
 *
 * It acts only on the exact owner a delivery's claim_ref names: a SandboxClaim with that uid,
 * or the claim a fast-path delivery created (its delivery uid). A fast-path delivery whose
 * claim was never written gets one now, so every delivered VM shows in `kubectl get
 * sandboxclaims`. Deliveries of other owners (aggregated-API Sandboxes, fork children,
 * snapshot claims), of legacy `<ns>/<name>` references, or whose name now belongs to another
 * object are `foreign` and left alone. A SandboxClaim or fast-path reference without this control
 * plane's MAC (a node or a sandboxd tenant wrote it) is `unproven` and left alone too: nothing is
 * created, recorded or released in the namespace it names. Before a claim is created or a token
 * Secret written, the pass asks whether claim-controller may write Secrets in the namespace, as
 * the bind path does (`not_enabled` when not).
 *
 * Cost per pass: one list per node, and the decisions come from the SandboxClaim informer, so
 * a fleet where every delivery is recorded costs nothing more. Only a delivery the cache says
 * needs a record costs more: a live Get of its claim (the cache may lag: a claim Bound a moment
 * ago must not be written twice), its token read back from the node, then the record itself.
 */
export class OrphanReconciler implements Runnable {
  readonly name = 'orphan-reconciler';
  constructor(private readonly o: OrphanReconcilerOptions) {}

  async start(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.reconcileAll(signal);
      // the shared sleep removes its abort listener when the interval ends (one added per pass would pile up on this long-lived signal)
      await sleep(this.o.intervalMs, signal, LOOP_WAIT);
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
      deliveries = await this.o.gateway.listDeliveries(inv, undefined, signal);
    } catch (err) {
      this.o.log.warn({ err, node: inv.node }, "orphan pass could not list the node's deliveries");
      this.o.onItem?.('error');
      return { adopted: 0, errors: 1 };
    }
    for (const d of deliveries) {
      const outcome = await this.#reconcileDelivery(d, signal);
      this.o.onItem?.(outcome);
      if (outcome === 'adopted' || outcome === 'created') out.adopted++;
      if (outcome === 'error') out.errors++;
    }
    return out;
  }

  /** Steady state (foreign, missing, bound by the cache) returns without a request. */
  async #reconcileDelivery(d: NodeDelivery, signal?: AbortSignal): Promise<OrphanOutcome> {
    const owner = claimOwnerOf(d.claimRef, this.o.refKey);
    if (owner === undefined) return 'foreign';
    // written by a node or a sandboxd tenant: it must never make this process write into the namespace it names
    if (owner === 'unproven') return 'unproven';
    const cached = orphanDecision(owner, d.assignment.claimId, this.o.cachedClaim(owner.namespace, owner.name));
    if (cached === 'foreign' || cached === 'bound') return cached;
    if (cached === 'missing') {
      this.o.log.debug(logFields(owner, d), 'delivery has no claim object; leaving the VM intact');
      return 'missing';
    }
    try {
      return cached === 'create' ? await this.#createFastPathClaim(owner, d, signal) : await this.#actOnLive(owner, d, signal);
    } catch (err) {
      // a refused write means the cached access answer is stale (RBAC changed since), as on the bind path
      if (isForbidden(err)) this.o.secretAccess.forget(owner.namespace);
      if (isClaimOwnerMismatch(err)) {
        this.o.log.warn(logFields(owner, d), 'delivery names a claim that is another object of the same name; not adopted');
        return 'foreign';
      }
      this.o.log.warn({ ...logFields(owner, d), err }, 'orphan pass could not settle a delivery; continuing the pass');
      return 'error';
    }
  }

  /**
   * The cache says the claim records no sandbox, or another one: the cache may lag (a claim
   * Bound a moment ago must not be written twice, a VM must not be released on a stale read),
   * so the decision is taken again on the live object before anything is written or released.
   */
  async #actOnLive(owner: SandboxOwner, d: NodeDelivery, signal?: AbortSignal): Promise<OrphanOutcome> {
    let live: SandboxClaim | undefined;
    try {
      live = await this.o.getClaim(owner.namespace, owner.name, signal);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    const decision = orphanDecision(owner, d.assignment.claimId, live);
    if (decision === 'create') return this.#createFastPathClaim(owner, d, signal);
    if (decision === 'foreign')
      this.o.log.warn(logFields(owner, d), 'delivery names a claim that is another object of the same name; not adopted');
    if (decision !== 'adopt' && decision !== 'duplicate') return decision;
    // 'adopt' and 'duplicate' are decided only on a claim that exists
    if (live === undefined) return 'missing';
    if (decision === 'adopt' && !(await this.#secretsAllowed(owner, d))) return 'not_enabled';
    if (decision === 'duplicate') {
      await this.o.gateway.release({ node: d.assignment.node, claimId: d.assignment.claimId, address: d.assignment.address }, signal);
      this.o.log.warn(
        { ...logFields(owner, d), holds: boundClaimId(live) },
        'released a second delivery of a claim that holds another sandbox',
      );
      return 'released';
    }
    await this.#recordAdopted(live, owner, d, signal);
    this.o.log.info(logFields(owner, d), 'adopted an orphaned delivery');
    return 'adopted';
  }

  /** The record of a fast-path delivery was never written (RBAC, quota, apiserver down): write it now. */
  async #createFastPathClaim(owner: SandboxOwner, d: NodeDelivery, signal?: AbortSignal): Promise<OrphanOutcome> {
    // asked before the claim is created: a claim whose token Secret cannot be written would record nothing
    if (!(await this.#secretsAllowed(owner, d))) return 'not_enabled';
    const warmPool = this.o.poolFor(owner.namespace, d.key) ?? UNKNOWN_POOL;
    // create-or-find: a claim of the name the cache had not seen yet is read and checked, never overwritten
    const claim = await this.o.fastPath.ensureClaim(
      { namespace: owner.namespace, name: owner.name, warmPool, deliveryUid: owner.uid },
      d.assignment.claimId,
      signal,
    );
    if (orphanDecision(owner, d.assignment.claimId, claim) === 'bound') return 'bound';
    await this.#recordAdopted(claim, owner, d, signal);
    this.o.log.info(logFields(owner, d), 'created the missing SandboxClaim of a fast-path delivery');
    return 'created';
  }

  /** Whether claim-controller may write the token Secret in the owner's namespace (RBAC, cached as the bind path caches it). */
  async #secretsAllowed(owner: SandboxOwner, d: NodeDelivery): Promise<boolean> {
    const access = await this.o.secretAccess.check(owner.namespace);
    if (!access.allowed)
      this.o.log.info(
        { ...logFields(owner, d), reason: access.reason },
        'claim Secrets may not be written in the namespace; the delivery is left unrecorded',
      );
    return access.allowed;
  }

  /** Records `claim` Bound to the delivery it owns, with the token read back from the node (the record carries it to the claim's Secret). */
  async #recordAdopted(claim: SandboxClaim, owner: SandboxOwner, d: NodeDelivery, signal?: AbortSignal): Promise<void> {
    const withToken = await this.o.gateway.withToken(d, signal);
    await this.o.recorder.recordBoundOn(
      claim,
      { namespace: owner.namespace, name: owner.name, uid: claim.metadata.uid ?? '' },
      withToken.assignment,
      signal,
      { adopted: true },
    );
  }
}

/** warmPoolRef of a fast-path claim re-created for a pool that no longer resolves. */
const UNKNOWN_POOL = 'unknown';

function logFields(owner: SandboxOwner, d: NodeDelivery): Record<string, string> {
  return { namespace: owner.namespace, name: owner.name, node: d.assignment.node, sandboxId: d.assignment.claimId, ownerKind: owner.kind };
}

/** Exact ownership: the claim's uid for a SandboxClaim reference, the delivery uid its record carries for a fast-path one. */
function ownedBy(claim: SandboxClaim, owner: SandboxOwner): boolean {
  if (owner.kind === OWNER_KINDS.claim) return claim.metadata.uid === owner.uid;
  return isClaimOfDelivery(claim, owner.uid);
}
