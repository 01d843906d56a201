import { AuthenticationV1Api, AuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { EXTENSIONS_GROUP, RESOURCES } from '@sandbox-scale/scale-core';

/** Who the caller is, as the API server's TokenReview says (never a field the caller sets, §13.11). */
export interface CallerIdentity {
  username: string;
  uid?: string;
  groups: string[];
  extra: Record<string, string[]>;
}

export interface Authorizer {
  /** undefined: the token does not authenticate. */
  authenticate(token: string, signal?: AbortSignal): Promise<CallerIdentity | undefined>;
  /** Whether `who` may create sandboxclaims in the namespace; denied carries the reason. */
  mayCreateClaim(who: CallerIdentity, namespace: string, name: string): Promise<{ allowed: boolean; reason: string }>;
}

/** Delegated authn/authz: TokenReview, then a SubjectAccessReview with groups, uid and extra. */
export class ReviewAuthorizer implements Authorizer {
  readonly #authn: AuthenticationV1Api;
  readonly #authz: AuthorizationV1Api;
  constructor(kc: KubeConfig) {
    this.#authn = kc.makeApiClient(AuthenticationV1Api);
    this.#authz = kc.makeApiClient(AuthorizationV1Api);
  }

  async authenticate(token: string): Promise<CallerIdentity | undefined> {
    const r = await this.#authn.createTokenReview({ body: { spec: { token } } });
    const u = r.status?.user;
    if (r.status?.authenticated !== true || !u?.username) return undefined;
    return { username: u.username, ...(u.uid ? { uid: u.uid } : {}), groups: u.groups ?? [], extra: u.extra ?? {} };
  }

  async mayCreateClaim(who: CallerIdentity, namespace: string, name: string): Promise<{ allowed: boolean; reason: string }> {
    const r = await this.#authz.createSubjectAccessReview({
      body: {
        spec: {
          user: who.username,
          groups: who.groups,
          extra: who.extra,
          ...(who.uid ? { uid: who.uid } : {}),
          resourceAttributes: { namespace, verb: 'create', group: EXTENSIONS_GROUP, resource: RESOURCES.sandboxClaim.plural, name },
        },
      },
    });
    const allowed = r.status?.allowed === true && r.status.denied !== true;
    return { allowed, reason: r.status?.reason ?? '' };
  }
}
