import type { KubeConfig } from '@kubernetes/client-node';
import { applyStatus, ResourceClient } from '@sandbox-scale/kube-runtime';
import { ANNOTATIONS, CLAIM_RELEASE_FINALIZER, FIELD_MANAGERS, type SandboxClaim } from '@sandbox-scale/scale-core';
import { setCondition, statusApplyBody, type ConditionInput } from './claim-status';
import { parseClaim, SandboxClaimResource } from '../resources';

/**
 * A SandboxClaim through the API server, besides its Bound record: the live read (a conflict,
 * an adoption's confirmation), the release finalizer, Bound/Ready conditions, and the delete of
 * a finished claim.
 */
export class ClaimClient {
  readonly #claims: ResourceClient;
  /**
   * `onWrite` is told the object each write returned (the own-write filter of the claim
   * controller, so the watch event of a write this process made does not reconcile again).
   */
  constructor(
    private readonly kc: KubeConfig,
    private readonly onWrite: (claim: SandboxClaim) => void = () => undefined,
  ) {
    this.#claims = new ResourceClient(kc, SandboxClaimResource);
  }

  async get(namespace: string, name: string, signal?: AbortSignal): Promise<SandboxClaim> {
    return parseClaim(await this.#claims.get(namespace, name, signal));
  }

  /** Sets one condition, keeping every other status field this manager owns (SSA drops omitted ones). */
  async setCondition(claim: SandboxClaim, cond: ConditionInput, now: Date, extra: ConditionInput[] = []): Promise<SandboxClaim> {
    let conditions = setCondition(claim.status?.conditions, cond, now, claim.metadata.generation);
    for (const c of extra) conditions = setCondition(conditions, c, now, claim.metadata.generation);
    const status = { ...(claim.status ?? {}), conditions };
    const out = await applyStatus(this.kc, statusApplyBody(claim, status), {
      fieldManager: FIELD_MANAGERS.claimController,
      force: true,
      resource: SandboxClaimResource,
      parse: parseClaim,
    });
    this.onWrite(out);
    return out;
  }

  /**
   * Optimistic (resourceVersion) so a concurrent finalizer edit is a conflict, not a lost write.
   * Returns the object as written: the live claim, newer than any cache, to decide on.
   * `deliveryNode`: the node being asked for the claim's sandbox, carried in the same patch as
   * the delivery-node hint (no write of its own).
   */
  async addFinalizer(claim: SandboxClaim, signal?: AbortSignal, deliveryNode?: string): Promise<SandboxClaim> {
    const finalizers = [...(claim.metadata.finalizers ?? []), CLAIM_RELEASE_FINALIZER];
    return this.#patchFinalizers(
      claim,
      finalizers,
      signal,
      deliveryNode === undefined ? undefined : { [ANNOTATIONS.deliveryNode]: deliveryNode },
    );
  }

  async removeFinalizer(claim: SandboxClaim): Promise<void> {
    const finalizers = (claim.metadata.finalizers ?? []).filter((f) => f !== CLAIM_RELEASE_FINALIZER);
    // the last finalizer of a deleted claim: the write deletes it, and its watch event is the
    // delete, never an update the own-write filter would meet, so it is not noted
    const gone = finalizers.length === 0 && claim.metadata.deletionTimestamp !== undefined;
    await this.#patchFinalizers(claim, finalizers, undefined, undefined, !gone);
  }

  async delete(claim: SandboxClaim): Promise<void> {
    await this.#claims.delete(claim.metadata.namespace, claim.metadata.name ?? '');
  }

  async #patchFinalizers(
    claim: SandboxClaim,
    finalizers: string[],
    signal?: AbortSignal,
    annotations?: Record<string, string>,
    note = true,
  ): Promise<SandboxClaim> {
    const patch = { metadata: { finalizers, resourceVersion: claim.metadata.resourceVersion, ...(annotations ? { annotations } : {}) } };
    const out = parseClaim(
      await this.#claims.mergePatch(claim.metadata.namespace, claim.metadata.name ?? '', patch, {
        fieldManager: FIELD_MANAGERS.claimController,
        ...(signal ? { signal } : {}),
      }),
    );
    if (note) this.onWrite(out);
    return out;
  }
}

export function hasFinalizer(claim: SandboxClaim): boolean {
  return claim.metadata.finalizers?.includes(CLAIM_RELEASE_FINALIZER) ?? false;
}
