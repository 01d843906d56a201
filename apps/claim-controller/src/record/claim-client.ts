import type { KubeConfig } from '@kubernetes/client-node';
import { applyStatus, ResourceClient } from '@sandbox-scale/kube-runtime';
import { ANNOTATIONS, CLAIM_RELEASE_FINALIZER, FIELD_MANAGERS, type SandboxClaim } from '@sandbox-scale/scale-core';
import { setCondition, statusApplyBody, type ConditionInput } from './claim-status';
import { parseClaim, SandboxClaimResource } from '../resources';

/**
 * What the claim writes tell the claim controller's own-write filter (OwnWrites), so the watch
 * event of a write this process made does not reconcile again: that a write of the object is
 * being sent (`begin`, whose returned function says it was answered or failed) and the object
 * it returned (`note`, before the answer is said).
 */
export interface ClaimWriteTracker {
  begin(uid: string | undefined): () => void;
  note(claim: SandboxClaim): void;
}

export const UNTRACKED_WRITES: ClaimWriteTracker = { begin: () => () => undefined, note: () => undefined };

/**
 * Sends `write` between the tracker's begin and end, noting what it returned (unless `note` is
 * false), so an update event of the object that comes before the answer waits for it.
 */
export async function trackedWrite(
  writes: ClaimWriteTracker,
  uid: string | undefined,
  write: () => Promise<SandboxClaim>,
  note = true,
): Promise<SandboxClaim> {
  const done = writes.begin(uid);
  try {
    const out = await write();
    if (note) writes.note(out);
    return out;
  } finally {
    done();
  }
}

/**
 * A SandboxClaim through the API server, besides its Bound record: the live read (a conflict,
 * an adoption's confirmation), the release finalizer, Bound/Ready conditions, and the delete of
 * a finished claim.
 */
export class ClaimClient {
  readonly #claims: ResourceClient;
  constructor(
    private readonly kc: KubeConfig,
    private readonly writes: ClaimWriteTracker = UNTRACKED_WRITES,
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
    return trackedWrite(this.writes, claim.metadata.uid, () =>
      applyStatus(this.kc, statusApplyBody(claim, status), {
        fieldManager: FIELD_MANAGERS.claimController,
        force: true,
        resource: SandboxClaimResource,
        parse: parseClaim,
      }),
    );
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
    const send = async (): Promise<SandboxClaim> =>
      parseClaim(
        await this.#claims.mergePatch(claim.metadata.namespace, claim.metadata.name ?? '', patch, {
          fieldManager: FIELD_MANAGERS.claimController,
          ...(signal ? { signal } : {}),
        }),
      );
    return trackedWrite(this.writes, claim.metadata.uid, send, note);
  }
}

export function hasFinalizer(claim: SandboxClaim): boolean {
  return claim.metadata.finalizers?.includes(CLAIM_RELEASE_FINALIZER) ?? false;
}
