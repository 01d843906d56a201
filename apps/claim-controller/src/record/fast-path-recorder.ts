import type { KubeConfig } from '@kubernetes/client-node';
import { isAlreadyExists, ResourceClient } from '@sandbox-scale/kube-runtime';
import { ANNOTATIONS, CLAIM_RELEASE_FINALIZER, EXTENSIONS_API_VERSION, FIELD_MANAGERS, type SandboxClaim } from '@sandbox-scale/scale-core';
import { parseClaim, SandboxClaimResource } from '../resources';
import type { Assignment, ClaimTarget } from '../gateway/assignment';
import type { ClaimRecorder } from './claim-recorder';
import { ClaimOwnerMismatchError } from './record-errors';

/** What the record of one fast-path delivery needs besides the Assignment. */
export interface FastPathDelivery extends ClaimTarget {
  /** The pool the caller named (the created claim's spec.warmPoolRef). */
  warmPool: string;
  /** The uid of the delivery's claim_ref (`fastclaim:<uid>:<ns>/<name>`). */
  deliveryUid: string;
  /** The caller asked for a TTL: the claim ends at the node's deadline instead of living until deleted. */
  bounded?: boolean;
  /** Who asked (the caller's authenticated username); unknown to a record made from a node's list. */
  requestedBy?: string;
}

export interface FastPathRecorderOptions {
  /**
   * Waited on before a record's writes (AnswersInFlight.turn): the fast path's answers are served
   * first and the records of a burst are written as it pauses. Resolves, never rejects; the
   * returned function is called when the record's writes are over.
   */
  yieldTo?: (signal?: AbortSignal) => Promise<() => void>;
}

/**
 * The record of a fast-path claim: the SandboxClaim object does not exist yet, so it is created
 * (carrying the claim id, which tells the reconciler a delivery is on its way and must not be
 * claimed again, the delivery uid that ties it to the node's claim_ref, and the release
 * finalizer), then marked Bound like any other. A claim of the name that this delivery did not
 * create is never written to (ClaimOwnerMismatchError).
 */
export class FastPathRecorder {
  readonly #claims: ResourceClient;
  constructor(
    kc: KubeConfig,
    private readonly recorder: ClaimRecorder,
    private readonly opts: FastPathRecorderOptions = {},
  ) {
    this.#claims = new ResourceClient(kc, SandboxClaimResource);
  }

  async recordBound(d: FastPathDelivery, a: Assignment, signal?: AbortSignal, adopted = false): Promise<void> {
    const endTurn = this.opts.yieldTo ? await this.opts.yieldTo(signal) : undefined;
    try {
      signal?.throwIfAborted();
      // the created (or re-read) object is live: recorded onto directly, without reading it again
      const claim = await this.ensureClaim(d, a.claimId, signal, a.deadline);
      await this.recorder.recordBoundOn(claim, { namespace: d.namespace, name: d.name, uid: claim.metadata.uid ?? '' }, a, signal, {
        adopted,
        fastPath: true,
      });
    } finally {
      endTurn?.();
    }
  }

  /**
   * Creates the claim of the delivery, or finds the one an earlier attempt created. A caller that
   * asked for a TTL gets a claim that ends then (the node's deadline); without one the claim lives
   * until deleted and its node lease is renewed like any other claim's.
   */
  async ensureClaim(d: FastPathDelivery, claimId: string, signal?: AbortSignal, deadline?: string): Promise<SandboxClaim> {
    const lifecycle = d.bounded && deadline ? { lifecycle: { shutdownTime: deadline } } : {};
    const body = {
      apiVersion: EXTENSIONS_API_VERSION,
      kind: 'SandboxClaim',
      metadata: {
        name: d.name,
        namespace: d.namespace,
        finalizers: [CLAIM_RELEASE_FINALIZER],
        annotations: {
          [ANNOTATIONS.claimId]: claimId,
          [ANNOTATIONS.deliveryUid]: d.deliveryUid,
          ...(d.requestedBy ? { [ANNOTATIONS.requestedBy]: d.requestedBy } : {}),
        },
      },
      spec: { warmPoolRef: { name: d.warmPool }, ...lifecycle },
    };
    try {
      return parseClaim(
        await this.#claims.create(d.namespace, body, { fieldManager: FIELD_MANAGERS.claimController, ...(signal ? { signal } : {}) }),
      );
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
    const existing = parseClaim(await this.#claims.get(d.namespace, d.name, signal));
    if (!isClaimOfDelivery(existing, d.deliveryUid) || existing.metadata.annotations?.[ANNOTATIONS.claimId] !== claimId) {
      throw new ClaimOwnerMismatchError(
        `SandboxClaim ${d.namespace}/${d.name} exists and was not created for fast-path delivery ${claimId}; the delivery is not recorded on it`,
      );
    }
    return existing;
  }
}

/** Whether `claim` is the record claim-controller created for the fast-path delivery `deliveryUid`. */
export function isClaimOfDelivery(claim: SandboxClaim, deliveryUid: string): boolean {
  return deliveryUid !== '' && claim.metadata.annotations?.[ANNOTATIONS.deliveryUid] === deliveryUid;
}
