import type { KubeConfig } from '@kubernetes/client-node';
import { isAlreadyExists, ResourceClient } from '@sandbox-scale/kube-runtime';
import { ANNOTATIONS, CLAIM_RELEASE_FINALIZER, EXTENSIONS_API_VERSION, FIELD_MANAGERS } from '@sandbox-scale/scale-core';
import { SandboxClaimResource } from '../resources';
import type { Assignment, BoundRecorder, ClaimTarget } from './assignment';
import type { ClaimRecorder } from './claim-recorder';

/**
 * The record of a fast-path claim: the SandboxClaim object does not exist yet, so it is created
 * (carrying the claim id, which tells the reconciler a delivery is on its way and must not be
 * claimed again, and the release finalizer), then marked Bound like any other.
 */
export class FastPathRecorder implements BoundRecorder {
  readonly #claims: ResourceClient;
  constructor(
    kc: KubeConfig,
    private readonly recorder: ClaimRecorder,
    private readonly pools: Map<string, { warmPool: string; ttlSeconds: number }>,
  ) {
    this.#claims = new ResourceClient(kc, SandboxClaimResource);
  }

  /** Remembers the pool and asked TTL of a delivery until its object is created. */
  expect(target: ClaimTarget, warmPool: string, ttlSeconds = 0): void {
    this.pools.set(`${target.namespace}/${target.name}`, { warmPool, ttlSeconds });
  }

  async recordBound(target: ClaimTarget, a: Assignment, signal?: AbortSignal): Promise<void> {
    const key = `${target.namespace}/${target.name}`;
    const { warmPool, ttlSeconds } = this.pools.get(key) ?? { warmPool: '', ttlSeconds: 0 };
    // A caller that asked for a TTL gets a claim that ends then (the node's deadline); without
    // one the claim lives until deleted and its node lease is renewed like any other claim's.
    const lifecycle = ttlSeconds > 0 && a.deadline ? { lifecycle: { shutdownTime: a.deadline } } : {};
    const body = {
      apiVersion: EXTENSIONS_API_VERSION,
      kind: 'SandboxClaim',
      metadata: { name: target.name, namespace: target.namespace, finalizers: [CLAIM_RELEASE_FINALIZER], annotations: { [ANNOTATIONS.claimId]: a.claimId } },
      spec: { warmPoolRef: { name: warmPool }, ...lifecycle },
    };
    try {
      await this.#claims.create(target.namespace, body, { fieldManager: FIELD_MANAGERS.claimController, ...(signal ? { signal } : {}) });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
    }
    await this.recorder.recordBound(target, a, signal);
    this.pools.delete(key);
  }
}
