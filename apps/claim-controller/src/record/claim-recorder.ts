import type { KubeConfig } from '@kubernetes/client-node';
import { apiStatusOf, applyStatus, isAlreadyExists, ResourceClient } from '@sandbox-scale/kube-runtime';
import { EXTENSIONS_API_VERSION, FIELD_MANAGERS, type SandboxClaim } from '@sandbox-scale/scale-core';
import { parseClaim, SandboxClaimResource, SecretResource } from '../resources';
import type { Assignment, ClaimTarget } from '../gateway/assignment';
import type { BoundRecorder } from './record-queue';
import { boundClaimId, boundConditionTrue, boundStatus, statusApplyBody, tokenSecretName } from './claim-status';
import { ClaimBoundElsewhereError, ClaimOwnerMismatchError, SecretNotOwnedError } from './record-errors';
import { trackedWrite, UNTRACKED_WRITES, type ClaimWriteTracker } from './claim-client';

export interface ClaimRecorderOptions {
  kubeConfig: KubeConfig;
  now?: () => Date;
  /** Told once per claim that moved to Bound (events, metrics); `fastPath`: the record of a fast-path answer. */
  onBound?: (claim: SandboxClaim, assignment: Assignment, adopted: boolean, fastPath: boolean) => void;
  /** The claim controller's own-write filter, told of each status write (see ClaimWriteTracker). */
  writes?: ClaimWriteTracker;
}

export interface RecordOptions {
  /** The delivery was found on its node, not made by this pass (the event says Adopted). */
  adopted?: boolean;
  /** The Secret first, then the status: after a failed record, so a status never names a Secret that cannot be written. */
  secretFirst?: boolean;
  /** The record of a fast-path answer, written by its async record job (onBound is told). */
  fastPath?: boolean;
}

/**
 * The Bound record: the status (SSA, status subresource) and the token Secret owned by the
 * claim, written concurrently (one round trip, not two; the status names the Secret, which
 * lands within the same round trip; a Secret that cannot be written puts the status back). Idempotent: a claim already Bound to the same sandbox
 * only has its Secret written again when the token is at hand (a record whose Secret write
 * failed after its status landed is finished that way). A missing claim is an error for the caller to judge (the
 * orphan pass skips it; it never destroys the VM).
 *
 * It writes only onto the owner the delivery was made for: a target carrying a uid must be
 * that very object (not a claim created again under the name), a claim Bound to another
 * sandbox is never overwritten, and a Secret of the token's name that the claim does not
 * control is never taken over. Each of those is a typed error and nothing is written.
 */
export class ClaimRecorder implements BoundRecorder {
  readonly #claims: ResourceClient;
  readonly #secrets: ResourceClient;
  constructor(private readonly opts: ClaimRecorderOptions) {
    this.#claims = new ResourceClient(opts.kubeConfig, SandboxClaimResource);
    this.#secrets = new ResourceClient(opts.kubeConfig, SecretResource);
  }

  async recordBound(target: ClaimTarget, a: Assignment, signal?: AbortSignal, adopted = false): Promise<void> {
    const claim = parseClaim(await this.#claims.get(target.namespace, target.name, signal));
    await this.recordBoundOn(claim, target, a, signal, { adopted });
  }

  /**
   * recordBound onto `claim`, an object the caller has just read from the API server (not from
   * a cache): the same checks, without reading it again. The status apply is conditional on its
   * resourceVersion, so a claim that changed since is a 409, never a blind overwrite.
   */
  async recordBoundOn(
    claim: SandboxClaim,
    target: ClaimTarget,
    a: Assignment,
    signal?: AbortSignal,
    opts: RecordOptions = {},
  ): Promise<SandboxClaim> {
    if (target.uid !== undefined && claim.metadata.uid !== target.uid) {
      throw new ClaimOwnerMismatchError(
        `SandboxClaim ${target.namespace}/${target.name} has uid ${claim.metadata.uid}, not ${target.uid}: it is another claim of the same name; sandbox ${a.claimId} is not recorded on it`,
      );
    }
    const current = boundClaimId(claim);
    if (current !== '' && current !== a.claimId) {
      throw new ClaimBoundElsewhereError(
        `SandboxClaim ${target.namespace}/${target.name} is Bound to sandbox ${current}; sandbox ${a.claimId} is not recorded on it`,
      );
    }
    const sameSandbox = current === a.claimId;
    if (sameSandbox && boundConditionTrue(claim) && (a.token === '' || claim.status?.sandbox?.tokenSecretName)) {
      if (a.token !== '') await this.#writeSecret(claim, a, signal);
      return claim;
    }
    const withSecret = a.token !== '' || (sameSandbox && !!claim.status?.sandbox?.tokenSecretName);
    const status = boundStatus(claim, a, (this.opts.now ?? (() => new Date()))(), withSecret);
    // resourceVersion makes the apply conditional on the object decided on: a claim deleted
    // and created again, or Bound by another writer meanwhile, is a 409 and is read afresh
    const body = statusApplyBody(claim, status);
    // After a failed record the Secret goes first, so a status never names a Secret that cannot be written (one of that name not ours).
    if (opts.secretFirst && a.token !== '') await this.#writeSecret(claim, a, signal);
    const writes = this.opts.writes ?? UNTRACKED_WRITES;
    const applied = trackedWrite(writes, claim.metadata.uid, () =>
      applyStatus(
        this.opts.kubeConfig,
        { ...body, metadata: { ...body.metadata, resourceVersion: claim.metadata.resourceVersion } },
        {
          fieldManager: FIELD_MANAGERS.claimController,
          force: true,
          resource: SandboxClaimResource,
          parse: parseClaim,
          ...(signal ? { signal } : {}),
        },
      ),
    );
    const [secretOut, statusOut] = await Promise.allSettled([
      a.token !== '' && !opts.secretFirst ? this.#writeSecret(claim, a, signal) : Promise.resolve(),
      applied,
    ]);
    // both settle before either failure is reported, so a retry never races a write still in flight
    if (statusOut.status === 'rejected') throw statusOut.reason;
    if (secretOut.status === 'rejected') {
      // The status names a Secret that could not be written (one of its name not ours, RBAC, the
      // API server away): the status is put back as it was, so a Bound status always has its
      // Secret; the retry writes the Secret first. A revert that fails too leaves the claim
      // Bound with the delivery still held by the caller, whose retry writes the Secret again.
      await this.#restoreStatus(claim, signal).catch(() => undefined);
      throw secretOut.reason;
    }
    this.opts.onBound?.(claim, a, opts.adopted ?? false, opts.fastPath ?? false);
    return statusOut.value;
  }

  /**
   * Applies `claim`'s status as it was before the Bound write: this manager's fields go back to
   * what they were (those it added are dropped). Not conditional on the resourceVersion (a
   * reconcile may have touched the claim since), only on the uid: the same object.
   */
  async #restoreStatus(claim: SandboxClaim, signal?: AbortSignal): Promise<void> {
    const body = statusApplyBody(claim, claim.status ?? {});
    await trackedWrite(this.opts.writes ?? UNTRACKED_WRITES, claim.metadata.uid, () =>
      applyStatus(
        this.opts.kubeConfig,
        { ...body, metadata: { ...body.metadata, uid: claim.metadata.uid } },
        {
          fieldManager: FIELD_MANAGERS.claimController,
          force: true,
          resource: SandboxClaimResource,
          parse: parseClaim,
          ...(signal ? { signal } : {}),
        },
      ),
    );
  }

  /**
   * Create the Secret; if one of the name exists, rewrite its data only when its controller
   * owner is this claim (a JSON patch whose first operation tests the owner's uid, so the check
   * and the write are one atomic step and no read of Secrets is needed).
   */
  async #writeSecret(claim: SandboxClaim, a: Assignment, signal?: AbortSignal): Promise<void> {
    const name = claim.metadata.name ?? '';
    const namespace = claim.metadata.namespace ?? '';
    const uid = claim.metadata.uid ?? '';
    const secretName = tokenSecretName(name);
    const b64 = (v: string): string => Buffer.from(v, 'utf8').toString('base64');
    const data = { token: b64(a.token), claimId: b64(a.claimId), node: b64(a.node), address: b64(a.address) };
    const owner = { apiVersion: EXTENSIONS_API_VERSION, kind: 'SandboxClaim', name, uid, controller: true, blockOwnerDeletion: true };
    const body = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: secretName, namespace, ownerReferences: [owner] },
      type: 'Opaque',
      data,
    };
    const opts = { fieldManager: FIELD_MANAGERS.claimController, ...(signal ? { signal } : {}) };
    try {
      await this.#secrets.create(namespace, body, opts);
      return;
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
    try {
      await this.#secrets.jsonPatch(
        namespace,
        secretName,
        [
          { op: 'test', path: '/metadata/ownerReferences/0/uid', value: uid },
          { op: 'test', path: '/metadata/ownerReferences/0/controller', value: true },
          { op: 'replace', path: '/data', value: data },
        ],
        opts,
      );
    } catch (err) {
      // 422: a test failed (or the Secret has no owner at all): someone else's Secret
      if (apiStatusOf(err)?.code === 422)
        throw new SecretNotOwnedError(
          `Secret ${namespace}/${secretName} exists and is not controlled by SandboxClaim ${name} (uid ${uid}); it is not overwritten`,
          { cause: err },
        );
      throw err;
    }
  }
}
