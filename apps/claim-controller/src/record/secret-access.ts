import type { KubeConfig } from '@kubernetes/client-node';
import { kubeRequest } from '@sandbox-scale/kube-runtime';
import { z } from 'zod';

/** The chart value that lists the namespaces where claim-controller may write claim Secrets. */
export const SECRET_NAMESPACES_VALUE = 'claimController.secretNamespaces';

/** The verbs the Bound record needs on a claim's token Secret: server-side apply creates it, then patches it. */
const SECRET_VERBS = ['create', 'patch'] as const;

export interface SecretAccessDecision {
  allowed: boolean;
  /** Why not, as the authorizer put it ('' when allowed or when it gave none). */
  reason: string;
}

/** One access question put to the API server: may this process `verb` secrets in `namespace`? */
export type SecretReviewer = (namespace: string, verb: string) => Promise<{ allowed: boolean; reason: string }>;

const ReviewStatusSchema = z.object({
  status: z.object({ allowed: z.boolean(), denied: z.boolean().optional(), reason: z.string().optional() }).optional(),
});

/** Bound on one review, so an API server that stops answering fails the pass (retried) instead of holding it. */
const REVIEW_TIMEOUT_MS = 10_000;

/** The real reviewer: a SelfSubjectAccessReview under the process's own credentials. */
export function selfSubjectReviewer(kc: KubeConfig): SecretReviewer {
  return async (namespace, verb) => {
    const out = await kubeRequest(kc, {
      method: 'POST',
      path: '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SelfSubjectAccessReview',
        spec: { resourceAttributes: { namespace, verb, group: '', resource: 'secrets' } },
      },
      signal: AbortSignal.timeout(REVIEW_TIMEOUT_MS),
    });
    const r = ReviewStatusSchema.parse(out);
    return { allowed: r.status?.allowed === true && r.status.denied !== true, reason: r.status?.reason ?? '' };
  };
}

export interface SecretAccessOptions {
  review: SecretReviewer;
  /** How long an allowed namespace is trusted before it is asked again. Default 30 s. */
  allowedTtlMs?: number;
  /** How long a refused namespace stays refused; shorter than the claim requeue, so each recheck asks afresh. Default 10 s. */
  deniedTtlMs?: number;
  /** Namespaces remembered at once; the oldest answer goes first. Default 4096. */
  maxEntries?: number;
  now?: () => number;
}

export const DEFAULT_SECRET_ACCESS_ALLOWED_TTL_MS = 30_000;
export const DEFAULT_SECRET_ACCESS_DENIED_TTL_MS = 10_000;

/**
 * Whether claim-controller may write claim Secrets in a namespace, asked of the API server
 * (SelfSubjectAccessReview) before any VM is claimed for a claim there.
 *
 * RBAC itself is the truth, not a copy of the chart's namespace list: the chart grants the
 * writes cluster-wide by default and, when claimController.secretNamespaces is set, only
 * through a Role in each listed namespace. Asking the API server means a namespace enabled by
 * `helm upgrade` (or any RoleBinding an operator adds) is seen without a restart, and a list
 * given to the controller could never drift from what RBAC allows. Any authenticated user may
 * create a SelfSubjectAccessReview (system:basic-user), so this needs no extra rule.
 *
 * Answers are cached per namespace, allowed and denied alike, for a short time and a bounded
 * number of namespaces, so a burst of claims in one namespace costs one review. A failed review
 * (the API server away) is not cached: it propagates and the caller retries.
 */
export class SecretAccess {
  readonly #cache = new Map<string, { decision: SecretAccessDecision; expires: number }>();
  readonly #inflight = new Map<string, Promise<SecretAccessDecision>>();
  readonly #o: SecretAccessOptions;

  constructor(o: SecretAccessOptions) {
    this.#o = o;
  }

  async check(namespace: string): Promise<SecretAccessDecision> {
    const now = this.#now();
    const hit = this.#cache.get(namespace);
    if (hit && hit.expires > now) return hit.decision;
    const running = this.#inflight.get(namespace);
    if (running) return running;
    const p = this.#review(namespace).finally(() => this.#inflight.delete(namespace));
    this.#inflight.set(namespace, p);
    return p;
  }

  /** Drops the cached answer, e.g. after a Secret write in the namespace was refused. */
  forget(namespace: string): void {
    this.#cache.delete(namespace);
  }

  async #review(namespace: string): Promise<SecretAccessDecision> {
    const reviews = await Promise.all(SECRET_VERBS.map((verb) => this.#o.review(namespace, verb)));
    const refused = reviews.find((r) => !r.allowed);
    const decision: SecretAccessDecision = refused ? { allowed: false, reason: refused.reason } : { allowed: true, reason: '' };
    const ttl = decision.allowed
      ? (this.#o.allowedTtlMs ?? DEFAULT_SECRET_ACCESS_ALLOWED_TTL_MS)
      : (this.#o.deniedTtlMs ?? DEFAULT_SECRET_ACCESS_DENIED_TTL_MS);
    this.#cache.delete(namespace);
    if (this.#cache.size >= (this.#o.maxEntries ?? 4096)) {
      const oldest = this.#cache.keys().next();
      if (!oldest.done) this.#cache.delete(oldest.value);
    }
    this.#cache.set(namespace, { decision, expires: this.#now() + ttl });
    return decision;
  }

  #now(): number {
    return (this.#o.now ?? Date.now)();
  }
}

/** The refusal a claim in a namespace without Secret access gets, naming the chart value that enables it. */
export function namespaceNotEnabledMessage(namespace: string, decision: SecretAccessDecision): string {
  return (
    `claim-controller may not create and patch Secrets in namespace "${namespace}", so it cannot store the claim's sandbox token there` +
    `${decision.reason ? ` (${decision.reason})` : ''}; no sandbox was claimed. Add "${namespace}" to the chart value ${SECRET_NAMESPACES_VALUE} ` +
    `(helm upgrade), or leave that list empty to allow every namespace`
  );
}
