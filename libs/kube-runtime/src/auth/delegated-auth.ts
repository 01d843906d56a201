import { createHash } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import { findInCauseChain, StatusError, withDeadline } from '@sandbox-scale/scale-core';
import { z } from 'zod';
import { kubeRequest } from '../client/kube-request';
import { TtlLru } from './ttl-lru';

/** An authenticated caller, as TokenReview returns it and SubjectAccessReview takes it. */
export interface UserInfo {
  readonly username: string;
  readonly uid?: string;
  readonly groups: readonly string[];
  readonly extra: Readonly<Record<string, readonly string[]>>;
}

export interface ResourceAttributes {
  readonly namespace?: string;
  readonly verb: string;
  readonly group: string;
  readonly version?: string;
  readonly resource: string;
  readonly subresource?: string;
  readonly name?: string;
}

export interface NonResourceAttributes {
  readonly path: string;
  readonly verb: string;
}

/** What is asked of SubjectAccessReview: an API resource or a plain path. */
export type AccessAttributes = { readonly resource: ResourceAttributes } | { readonly nonResource: NonResourceAttributes };

export interface Decision {
  readonly allowed: boolean;
  readonly reason: string;
}

export interface DelegatedAuthOptions {
  /**
   * TokenReview `spec.audiences`. A token is accepted only when the API server confirms one
   * of them in `status.audiences`; empty asks for the API server's own audience.
   */
  readonly audiences?: readonly string[];
  /** Groups allowed without asking (kube's delegated authorizer allows system:masters). */
  readonly alwaysAllowGroups?: readonly string[];
  /** Per-call bound on a review; the caller's signal can end it sooner. Default 10 s. */
  readonly timeoutMs?: number;
  /** TTLs of the four caches (kube's delegated defaults: 10 s each). */
  readonly authenticatedTtlMs?: number;
  readonly unauthenticatedTtlMs?: number;
  readonly allowedTtlMs?: number;
  readonly deniedTtlMs?: number;
  /** Bound of each cache. Default 10 000. */
  readonly maxEntries?: number;
  readonly now?: () => number;
}

/**
 * A review could not be completed (transport error, timeout, non-2xx, unreadable answer).
 * Nobody is let in on it, and it is never cached. The message is generic on purpose: what
 * the API server said stays in `cause`, for the log, never in a response body.
 */
export class AuthUnavailableError extends StatusError {
  constructor(what: 'authentication' | 'authorization', cause: unknown) {
    super('ServiceUnavailable', `${what} is unavailable, retry later`, { retryAfterSeconds: 1 }, { cause });
  }
}

export function isAuthUnavailable(err: unknown): boolean {
  return findInCauseChain(err, 'AuthUnavailableError') !== undefined;
}

const TokenReviewSchema = z.object({
  status: z
    .object({
      authenticated: z.boolean().optional(),
      audiences: z.array(z.string()).optional(),
      user: z
        .object({
          username: z.string().optional(),
          uid: z.string().optional(),
          groups: z.array(z.string()).optional(),
          extra: z.record(z.string(), z.array(z.string())).optional(),
        })
        .optional(),
    })
    .optional(),
});

const SarSchema = z.object({
  status: z.object({ allowed: z.boolean().optional(), denied: z.boolean().optional(), reason: z.string().optional() }).optional(),
});

/**
 * The user a TokenReview answer authenticates, or undefined. With audiences asked for, the
 * answer must name one of them: an API server that ignores audiences returns none, and a
 * token for another service must not pass for ours.
 */
export function userOfTokenReview(raw: unknown, audiences: readonly string[]): UserInfo | undefined {
  const status = TokenReviewSchema.parse(raw).status;
  const u = status?.user;
  if (status?.authenticated !== true || !u?.username) return undefined;
  if (audiences.length > 0 && !(status.audiences ?? []).some((a) => audiences.includes(a))) return undefined;
  return { username: u.username, ...(u.uid ? { uid: u.uid } : {}), groups: u.groups ?? [], extra: u.extra ?? {} };
}

/** Allowed only on an explicit allow without a deny. */
export function decisionOfSar(raw: unknown): Decision {
  const status = SarSchema.parse(raw).status;
  return { allowed: status?.allowed === true && status.denied !== true, reason: status?.reason ?? '' };
}

export function sarSpecOf(user: UserInfo, attrs: AccessAttributes): Record<string, unknown> {
  const who = { user: user.username, ...(user.uid ? { uid: user.uid } : {}), groups: user.groups, extra: user.extra };
  return 'resource' in attrs ? { ...who, resourceAttributes: attrs.resource } : { ...who, nonResourceAttributes: attrs.nonResource };
}

// Tokens are cache keys only as digests, so a heap dump holds no bearer token.
function digest(s: string): string {
  return createHash('sha256').update(s).digest('base64url');
}

/**
 * Delegated authentication and authorization (k8s-api.md §4.4-4.5): bearer tokens through
 * TokenReview, decisions through SubjectAccessReview. Each outcome has its own bounded LRU,
 * so a flood of bad tokens or denied questions evicts only other bad tokens and denials,
 * never a good caller's entry. Any failure refuses and is never cached.
 */
export class DelegatedAuth {
  readonly #audiences: readonly string[];
  readonly #alwaysAllow: readonly string[];
  readonly #timeoutMs: number;
  readonly #authenticated: TtlLru<string, UserInfo>;
  readonly #unauthenticated: TtlLru<string, true>;
  readonly #allowed: TtlLru<string, Decision>;
  readonly #denied: TtlLru<string, Decision>;

  constructor(
    private readonly kc: KubeConfig,
    o: DelegatedAuthOptions = {},
  ) {
    const max = o.maxEntries ?? 10_000;
    const now = o.now ?? Date.now;
    this.#audiences = [...(o.audiences ?? [])];
    this.#alwaysAllow = [...(o.alwaysAllowGroups ?? [])];
    this.#timeoutMs = o.timeoutMs ?? 10_000;
    this.#authenticated = new TtlLru(max, o.authenticatedTtlMs ?? 10_000, now);
    this.#unauthenticated = new TtlLru(max, o.unauthenticatedTtlMs ?? 10_000, now);
    this.#allowed = new TtlLru(max, o.allowedTtlMs ?? 10_000, now);
    this.#denied = new TtlLru(max, o.deniedTtlMs ?? 10_000, now);
  }

  get audiences(): readonly string[] {
    return this.#audiences;
  }

  /** The token's user, or undefined when it does not authenticate for our audiences. */
  async authenticateToken(token: string, signal?: AbortSignal): Promise<UserInfo | undefined> {
    if (token === '') return undefined;
    const key = digest(token);
    const hit = this.#authenticated.get(key);
    if (hit !== undefined) return hit;
    if (this.#unauthenticated.get(key) !== undefined) return undefined;
    const raw = await this.#post(
      'authentication',
      '/apis/authentication.k8s.io/v1/tokenreviews',
      {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenReview',
        spec: { token, ...(this.#audiences.length > 0 ? { audiences: this.#audiences } : {}) },
      },
      signal,
    );
    const user = this.#read('authentication', () => userOfTokenReview(raw, this.#audiences));
    if (user === undefined) this.#unauthenticated.set(key, true);
    else this.#authenticated.set(key, user);
    return user;
  }

  async authorize(user: UserInfo, attrs: AccessAttributes, signal?: AbortSignal): Promise<Decision> {
    if (user.groups.some((g) => this.#alwaysAllow.includes(g))) return { allowed: true, reason: '' };
    const spec = sarSpecOf(user, attrs);
    const key = JSON.stringify(spec);
    const hit = this.#allowed.get(key) ?? this.#denied.get(key);
    if (hit !== undefined) return hit;
    const raw = await this.#post(
      'authorization',
      '/apis/authorization.k8s.io/v1/subjectaccessreviews',
      { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec },
      signal,
    );
    const decision = this.#read('authorization', () => decisionOfSar(raw));
    (decision.allowed ? this.#allowed : this.#denied).set(key, decision);
    return decision;
  }

  async #post(what: 'authentication' | 'authorization', path: string, body: unknown, signal?: AbortSignal): Promise<unknown> {
    try {
      return await withDeadline(signal, this.#timeoutMs, (s) => kubeRequest(this.kc, { method: 'POST', path, body, signal: s }));
    } catch (err) {
      throw new AuthUnavailableError(what, err);
    }
  }

  #read<T>(what: 'authentication' | 'authorization', parse: () => T): T {
    try {
      return parse();
    } catch (err) {
      throw new AuthUnavailableError(what, err);
    }
  }
}
