import { createHash } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import { findInCauseChain, parseOwn, StatusError } from '@sandbox-scale/scale-core';
import { z } from 'zod';
import { kubeRequest } from '../client/kube-request';
import { untilAborted } from '../abort';
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

/** Reviews of each kind a DelegatedAuth has open at once unless told otherwise. */
export const DEFAULT_TOKEN_REVIEWS_IN_FLIGHT = 256;

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
  /**
   * TTLs of the four caches (kube's delegated defaults: 10 s each). A positive answer is never
   * used past its TTL, so a revoked token or RoleBinding is refused at most that long after the
   * API server says so; a negative one makes a newly granted caller wait at most its TTL.
   */
  readonly authenticatedTtlMs?: number;
  readonly unauthenticatedTtlMs?: number;
  readonly allowedTtlMs?: number;
  readonly deniedTtlMs?: number;
  /**
   * Part of a positive answer's TTL after which a hit is still served but asked again in the
   * background (one review per key at a time), so a steady caller never waits on a review
   * after its first call. Default 0.5; 1 turns it off.
   */
  readonly refreshAfter?: number;
  /** Bound of each cache. Default 10 000. */
  readonly maxEntries?: number;
  /**
   * TokenReviews open at once. A token not cached past it is refused with 429 and Retry-After
   * rather than queued, so a flood of made-up tokens (which come before any per-user cap, there
   * being no user yet) cannot hold a socket and a pending request each without bound; tokens
   * already cached are still served, and a background refresh waits for the next hit.
   * SubjectAccessReviews are not counted: only an authenticated caller reaches them, and the
   * per-user caps bound those. Default DEFAULT_TOKEN_REVIEWS_IN_FLIGHT.
   */
  readonly maxTokenReviewsInFlight?: number;
  readonly now?: () => number;
}

/** A cached review answer and when it was fetched (the age that decides a background refresh). */
interface Cached<V> {
  readonly value: V;
  readonly fetched: number;
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

/**
 * As many TokenReviews are open as the server allows (`maxTokenReviewsInFlight`): this caller,
 * whose answer is not cached, is asked to come back (429, Retry-After) and is not let in.
 */
export class ReviewsBusyError extends StatusError {
  constructor(what: 'authentication' | 'authorization', limit: number) {
    super('TooManyRequests', `too many ${what} reviews in flight (${limit}), retry later`, { retryAfterSeconds: 1 });
  }
}

export function isReviewsBusy(err: unknown): boolean {
  return findInCauseChain(err, 'ReviewsBusyError') !== undefined;
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
  // read from objects that inherit nothing: a field the API server left out (it leaves out
  // authenticated and user for a rejected token) is never taken from a prototype
  const status = parseOwn(TokenReviewSchema, raw).status;
  const u = status?.user;
  if (status?.authenticated !== true || !u?.username) return undefined;
  if (audiences.length > 0 && !(status.audiences ?? []).some((a) => audiences.includes(a))) return undefined;
  return { username: u.username, ...(u.uid ? { uid: u.uid } : {}), groups: u.groups ?? [], extra: u.extra ?? {} };
}

/** Allowed only on an explicit allow without a deny. */
export function decisionOfSar(raw: unknown): Decision {
  const status = parseOwn(SarSchema, raw).status;
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
 * Delegated authentication and authorization: bearer tokens through
 * TokenReview, decisions through SubjectAccessReview. Each outcome has its own bounded LRU,
 * so a flood of bad tokens or denied questions evicts only other bad tokens and denials,
 * never a good caller's entry. Any failure refuses and is never cached.
 *
 * Concurrent misses of one key share one review (a burst of a new caller's first claims costs
 * one TokenReview and one SubjectAccessReview, not one each), and a positive answer past
 * `refreshAfter` of its TTL is renewed in the background while it is still served. TokenReviews of
 * distinct tokens share a bound (`maxTokenReviewsInFlight`) past which they are refused with 429.
 */
export class DelegatedAuth {
  readonly #audiences: readonly string[];
  readonly #alwaysAllow: readonly string[];
  readonly #timeoutMs: number;
  readonly #maxInFlight: number;
  readonly #now: () => number;
  readonly #authenticated: TtlLru<string, Cached<UserInfo>>;
  readonly #unauthenticated: TtlLru<string, true>;
  readonly #allowed: TtlLru<string, Cached<Decision>>;
  readonly #denied: TtlLru<string, Decision>;
  readonly #authenticatedRefreshMs: number;
  readonly #allowedRefreshMs: number;
  // reviews under way, by cache key: bounded by the requests in flight, each gone when it settles
  readonly #tokenReviews = new Map<string, Promise<UserInfo | undefined>>();
  readonly #accessReviews = new Map<string, Promise<Decision>>();

  constructor(
    private readonly kc: KubeConfig,
    o: DelegatedAuthOptions = {},
  ) {
    const max = o.maxEntries ?? 10_000;
    const now = o.now ?? Date.now;
    this.#audiences = [...(o.audiences ?? [])];
    this.#alwaysAllow = [...(o.alwaysAllowGroups ?? [])];
    this.#timeoutMs = o.timeoutMs ?? 10_000;
    this.#maxInFlight = Math.max(1, o.maxTokenReviewsInFlight ?? DEFAULT_TOKEN_REVIEWS_IN_FLIGHT);
    this.#now = now;
    const authenticatedTtl = o.authenticatedTtlMs ?? 10_000;
    const allowedTtl = o.allowedTtlMs ?? 10_000;
    const refreshAfter = Math.min(1, Math.max(0, o.refreshAfter ?? 0.5));
    this.#authenticatedRefreshMs = authenticatedTtl * refreshAfter;
    this.#allowedRefreshMs = allowedTtl * refreshAfter;
    this.#authenticated = new TtlLru(max, authenticatedTtl, now);
    this.#unauthenticated = new TtlLru(max, o.unauthenticatedTtlMs ?? 10_000, now);
    this.#allowed = new TtlLru(max, allowedTtl, now);
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
    if (hit !== undefined) {
      if (this.#now() - hit.fetched >= this.#authenticatedRefreshMs)
        this.#refresh(this.#tokenReviews, key, () => this.#reviewToken(key, token));
      return hit.value;
    }
    if (this.#unauthenticated.get(key) !== undefined) return undefined;
    return this.#shared('authentication', this.#tokenReviews, key, () => this.#reviewToken(key, token), signal);
  }

  async authorize(user: UserInfo, attrs: AccessAttributes, signal?: AbortSignal): Promise<Decision> {
    if (user.groups.some((g) => this.#alwaysAllow.includes(g))) return { allowed: true, reason: '' };
    const spec = sarSpecOf(user, attrs);
    const key = JSON.stringify(spec);
    const allowed = this.#allowed.get(key);
    if (allowed !== undefined) {
      if (this.#now() - allowed.fetched >= this.#allowedRefreshMs)
        this.#refresh(this.#accessReviews, key, () => this.#reviewAccess(key, spec));
      return allowed.value;
    }
    const denied = this.#denied.get(key);
    if (denied !== undefined) return denied;
    return this.#shared('authorization', this.#accessReviews, key, () => this.#reviewAccess(key, spec), signal);
  }

  /** Review requests under way (tests: concurrent misses of one key share one). */
  get reviewsInFlight(): number {
    return this.#tokenReviews.size + this.#accessReviews.size;
  }

  async #reviewToken(key: string, token: string): Promise<UserInfo | undefined> {
    const raw = await this.#post('authentication', '/apis/authentication.k8s.io/v1/tokenreviews', {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenReview',
      spec: { token, ...(this.#audiences.length > 0 ? { audiences: this.#audiences } : {}) },
    });
    const user = this.#read('authentication', () => userOfTokenReview(raw, this.#audiences));
    if (user === undefined) {
      // an answer that changed to no ends the positive one at once, and the other way round
      this.#authenticated.delete(key);
      this.#unauthenticated.set(key, true);
    } else {
      this.#unauthenticated.delete(key);
      this.#authenticated.set(key, { value: user, fetched: this.#now() });
    }
    return user;
  }

  async #reviewAccess(key: string, spec: Record<string, unknown>): Promise<Decision> {
    const raw = await this.#post('authorization', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec,
    });
    const decision = this.#read('authorization', () => decisionOfSar(raw));
    if (decision.allowed) {
      this.#denied.delete(key);
      this.#allowed.set(key, { value: decision, fetched: this.#now() });
    } else {
      this.#allowed.delete(key);
      this.#denied.set(key, decision);
    }
    return decision;
  }

  /**
   * The review of `key`, shared by every caller that misses it while it runs. The review itself
   * is bounded by the timeout only, so one caller going away does not fail the others; each
   * caller's own signal ends its wait (refused, as any review that did not complete).
   */
  #shared<V>(
    what: 'authentication' | 'authorization',
    running: Map<string, Promise<V>>,
    key: string,
    review: () => Promise<V>,
    signal: AbortSignal | undefined,
  ): Promise<V> {
    let p = running.get(key);
    if (p === undefined) {
      if (running === this.#tokenReviews && running.size >= this.#maxInFlight)
        return Promise.reject(new ReviewsBusyError(what, this.#maxInFlight));
      p = review().finally(() => running.delete(key));
      // a caller that stopped waiting leaves nobody to see the outcome: not an unhandled rejection
      p.catch(() => undefined);
      running.set(key, p);
    }
    return signal === undefined ? p : untilAborted(p, signal, (reason) => new AuthUnavailableError(what, reason));
  }

  /** A background review of a key still served from the cache; its failure leaves the entry to expire. */
  #refresh<V>(running: Map<string, Promise<V>>, key: string, review: () => Promise<V>): void {
    if (running.has(key) || (running === this.#tokenReviews && running.size >= this.#maxInFlight)) return;
    const p = review().finally(() => running.delete(key));
    p.catch(() => undefined);
    running.set(key, p);
  }

  async #post(what: 'authentication' | 'authorization', path: string, body: unknown): Promise<unknown> {
    try {
      return await kubeRequest(this.kc, { method: 'POST', path, body, signal: AbortSignal.timeout(this.#timeoutMs) });
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
