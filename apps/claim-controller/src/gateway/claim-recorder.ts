import type { KubeConfig } from '@kubernetes/client-node';
import { applyObject, applyStatus, ResourceClient } from '@sandbox-scale/kube-runtime';
import { EXTENSIONS_API_VERSION, FIELD_MANAGERS, type SandboxClaim } from '@sandbox-scale/scale-core';
import { parseClaim, SandboxClaimResource, SecretResource } from '../resources';
import type { Assignment, BoundRecorder, ClaimTarget } from './assignment';
import { boundConditionTrue, boundStatus, statusApplyBody, tokenSecretName } from './claim-status';

export interface ClaimRecorderOptions {
  kubeConfig: KubeConfig;
  now?: () => Date;
  /** Told once per claim that moved to Bound (events, metrics). */
  onBound?: (claim: SandboxClaim, assignment: Assignment, adopted: boolean) => void;
}

/**
 * The Bound record: point-Get the claim, write the token into a Secret owned by the claim,
 * then apply the status (SSA, status subresource). Idempotent: a claim already Bound to the
 * same sandbox is left alone. A missing claim is an error for the caller to judge (the
 * orphan pass skips it; it never destroys the VM).
 */
export class ClaimRecorder implements BoundRecorder {
  readonly #claims: ResourceClient;
  constructor(private readonly opts: ClaimRecorderOptions) {
    this.#claims = new ResourceClient(opts.kubeConfig, SandboxClaimResource);
  }

  async recordBound(target: ClaimTarget, a: Assignment, signal?: AbortSignal, adopted = false): Promise<void> {
    const claim = parseClaim(await this.#claims.get(target.namespace, target.name, signal));
    const sameSandbox = claim.status?.sandbox?.name === a.claimId;
    if (sameSandbox && boundConditionTrue(claim) && (a.token === '' || claim.status?.sandbox?.tokenSecretName)) return;
    const withSecret = a.token !== '' || (sameSandbox && !!claim.status?.sandbox?.tokenSecretName);
    if (a.token !== '') await this.#writeSecret(claim, a, signal);
    const status = boundStatus(claim, a, (this.opts.now ?? (() => new Date()))(), withSecret);
    await applyStatus(this.opts.kubeConfig, statusApplyBody(claim, status), { fieldManager: FIELD_MANAGERS.claimController, force: true, resource: SandboxClaimResource, ...(signal ? { signal } : {}) });
    this.opts.onBound?.(claim, a, adopted);
  }

  async #writeSecret(claim: SandboxClaim, a: Assignment, signal?: AbortSignal): Promise<void> {
    const name = claim.metadata.name ?? '';
    const b64 = (v: string): string => Buffer.from(v, 'utf8').toString('base64');
    const body = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: tokenSecretName(name),
        namespace: claim.metadata.namespace ?? '',
        ownerReferences: [{ apiVersion: EXTENSIONS_API_VERSION, kind: 'SandboxClaim', name, uid: claim.metadata.uid ?? '', controller: true, blockOwnerDeletion: true }],
      },
      type: 'Opaque',
      data: { token: b64(a.token), claimId: b64(a.claimId), node: b64(a.node), address: b64(a.address) },
    };
    await applyObject(this.opts.kubeConfig, body, { fieldManager: FIELD_MANAGERS.claimController, force: true, resource: SecretResource, ...(signal ? { signal } : {}) });
  }
}
