import type { KubeConfig } from '@kubernetes/client-node';
import { EXTENSIONS_GROUP, RESOURCES } from '@sandbox-scale/scale-core';
import { DelegatedAuth, type Decision, type UserInfo } from '@sandbox-scale/kube-runtime';

/** Who the caller is, as the API server's TokenReview says (never a field or header the caller sets). */
export type CallerIdentity = UserInfo;

export interface Authorizer {
  /** undefined: the token does not authenticate for the fast path's audiences. */
  authenticate(token: string, signal?: AbortSignal): Promise<CallerIdentity | undefined>;
  /** Whether `who` may create sandboxclaims in the namespace; denied carries the reason. */
  mayCreateClaim(who: CallerIdentity, namespace: string, signal?: AbortSignal): Promise<Decision>;
}

/**
 * How long the fast path trusts a review answer (docs/operations.md, "Who may call"). A revoked
 * token or RoleBinding is refused at most REVIEW_TTL_MS after kube-apiserver says so; a caller
 * refused is let in at most REVIEW_TTL_MS after the grant. Positive answers older than half of
 * it are renewed in the background while still served, so a repeat caller's claims pay no
 * Kubernetes round trip. kube's delegated authn/authz defaults are the same 10 s.
 */
export const REVIEW_TTL_MS = 10_000;
/** Answers of each kind (authenticated, not, allowed, denied) held at once; the least recently used go first. */
export const REVIEW_CACHE_ENTRIES = 10_000;

/** The DelegatedAuth of the fast path: our audiences only, the TTLs above. */
export function fastPathAuth(kc: KubeConfig, audiences: readonly string[], maxTokenReviewsInFlight?: number): DelegatedAuth {
  return new DelegatedAuth(kc, {
    audiences,
    authenticatedTtlMs: REVIEW_TTL_MS,
    unauthenticatedTtlMs: REVIEW_TTL_MS,
    allowedTtlMs: REVIEW_TTL_MS,
    deniedTtlMs: REVIEW_TTL_MS,
    refreshAfter: 0.5,
    maxEntries: REVIEW_CACHE_ENTRIES,
    ...(maxTokenReviewsInFlight !== undefined ? { maxTokenReviewsInFlight } : {}),
  });
}

/**
 * The fast path's questions, put to the shared DelegatedAuth (TokenReview for our audiences,
 * then a SubjectAccessReview for create on sandboxclaims, both cached and failing closed).
 */
export class ReviewAuthorizer implements Authorizer {
  constructor(private readonly auth: DelegatedAuth) {}

  authenticate(token: string, signal?: AbortSignal): Promise<CallerIdentity | undefined> {
    return this.auth.authenticateToken(token, signal);
  }

  mayCreateClaim(who: CallerIdentity, namespace: string, signal?: AbortSignal): Promise<Decision> {
    // Asked as the API server asks for a create: of the collection, without the new object's
    // name (which no RBAC rule can name before it exists). So one answer per caller and
    // namespace, cached, serves every claim of a repeat caller.
    return this.auth.authorize(
      who,
      { resource: { namespace, verb: 'create', group: EXTENSIONS_GROUP, resource: RESOURCES.sandboxClaim.plural } },
      signal,
    );
  }
}
