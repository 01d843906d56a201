import type { DelegatedAuth, UserInfo } from '@sandbox-scale/kube-runtime';
import { API_VERSION, SANDBOX_GROUP, statusErrorOf } from '@sandbox-scale/scale-core';
import { withAuthenticatedGroup } from '../authn/user-info';
import { forbiddenMessage } from '../http/status';
import { RouterError } from './router-errors';
import type { DistinctHeaders, RoutingTarget } from './routing-headers';

/** How the router knows its callers: `kubernetes` (the default) or, only when asked for by name, `none`. */
export const ROUTER_AUTHENTICATION_MODES = ['kubernetes', 'none'] as const;
export type RouterAuthentication = (typeof ROUTER_AUTHENTICATION_MODES)[number];

/** The verb and subresource a relay to a guest port is authorized as, as `kubectl sandbox port-forward` is. */
export const RELAY_VERB = 'create';
export const RELAY_SUBRESOURCE = 'portforward';

/** The caller, as far as the router knows it; anonymous under `none`. */
export type RouterCaller = { readonly user: UserInfo } | { readonly anonymous: true };

export interface RouterAuth {
  /** Who sends the request; a RouterError 401 when nobody the API server knows. */
  authenticate(headers: DistinctHeaders, signal?: AbortSignal): Promise<RouterCaller>;
  /** Resolves when the caller may reach the target; a RouterError 403 otherwise. */
  authorize(caller: RouterCaller, target: RoutingTarget, signal?: AbortSignal): Promise<void>;
}

const UNAUTHORIZED_HEADERS = { 'www-authenticate': 'Bearer realm="sandbox-router"' };

function unauthorized(detail: string): RouterError {
  return new RouterError(401, detail, { headers: UNAUTHORIZED_HEADERS });
}

/** A review that could not be made (503) or was one too many (429), with the API server's generic words. */
function reviewFailure(err: unknown): RouterError {
  const status = statusErrorOf(err);
  if (status === undefined) return new RouterError(503, 'authentication is unavailable, retry later', { retryAfterSeconds: 1, cause: err });
  return new RouterError(status.code, status.message, {
    ...(status.details.retryAfterSeconds !== undefined ? { retryAfterSeconds: status.details.retryAfterSeconds } : {}),
    cause: err,
  });
}

/** The token of the one `Authorization: Bearer …` header; a second Authorization header is no token at all. */
export function bearerTokenOf(headers: DistinctHeaders): string | undefined {
  const values = headers['authorization'] ?? [];
  if (values.length !== 1) return undefined;
  const m = /^bearer\s+(\S+)\s*$/i.exec(values[0] ?? '');
  return m?.[1];
}

/**
 * Kubernetes authentication and authorization through the server's one DelegatedAuth: the bearer
 * token by TokenReview (the API server's own audience), then a SubjectAccessReview of `create
 * sandboxes/portforward` on the sandbox in its namespace. Both answers are cached briefly and
 * bounded there (the Python client sends one request per call, each with the same token); a
 * review that fails refuses.
 */
export class KubernetesRouterAuth implements RouterAuth {
  constructor(private readonly auth: Pick<DelegatedAuth, 'authenticateToken' | 'authorize'>) {}

  async authenticate(headers: DistinctHeaders, signal?: AbortSignal): Promise<RouterCaller> {
    const token = bearerTokenOf(headers);
    if (token === undefined) throw unauthorized('A bearer token is required: Authorization: Bearer <Kubernetes token>.');
    let user: UserInfo | undefined;
    try {
      user = await this.auth.authenticateToken(token, signal);
    } catch (err) {
      throw reviewFailure(err);
    }
    if (user === undefined) throw unauthorized('The bearer token is not valid.');
    return { user: withAuthenticatedGroup(user) };
  }

  async authorize(caller: RouterCaller, target: RoutingTarget, signal?: AbortSignal): Promise<void> {
    if (!('user' in caller)) throw unauthorized('A bearer token is required: Authorization: Bearer <Kubernetes token>.');
    const attrs = {
      resource: {
        namespace: target.namespace,
        verb: RELAY_VERB,
        group: SANDBOX_GROUP,
        version: API_VERSION,
        resource: 'sandboxes',
        subresource: RELAY_SUBRESOURCE,
        name: target.name,
      },
    };
    let decision: { allowed: boolean; reason: string };
    try {
      decision = await this.auth.authorize(caller.user, attrs, signal);
    } catch (err) {
      throw reviewFailure(err);
    }
    if (!decision.allowed)
      throw new RouterError(403, forbiddenMessage({ user: caller.user.username, ...attrs.resource, reason: decision.reason }));
  }
}

/** No authentication: whoever reaches the port reaches every sandbox's guest ports. Started only by `--router-authentication=none`. */
export class OpenRouterAuth implements RouterAuth {
  authenticate(): Promise<RouterCaller> {
    return Promise.resolve({ anonymous: true });
  }

  authorize(): Promise<void> {
    return Promise.resolve();
  }
}

/** The username a log line names the caller by. */
export function callerName(caller: RouterCaller | undefined): string | undefined {
  if (caller === undefined) return undefined;
  return 'user' in caller ? caller.user.username : 'system:anonymous';
}
