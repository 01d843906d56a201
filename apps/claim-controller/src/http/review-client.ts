import { EXTENSIONS_GROUP, RESOURCES } from '@sandbox-scale/scale-core';
import type { Decision, DelegatedAuth, UserInfo } from '@sandbox-scale/kube-runtime';

/** Who the caller is, as the API server's TokenReview says (never a field the caller sets, §13.11). */
export type CallerIdentity = UserInfo;

export interface Authorizer {
  /** undefined: the token does not authenticate for the fast path's audiences. */
  authenticate(token: string, signal?: AbortSignal): Promise<CallerIdentity | undefined>;
  /** Whether `who` may create sandboxclaims in the namespace; denied carries the reason. */
  mayCreateClaim(who: CallerIdentity, namespace: string, signal?: AbortSignal): Promise<Decision>;
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
