import type { PoolKeyLike } from '../pool-key/pool-key';
import { normalizePoolKey } from '../pool-key/pool-key';
import { findInCauseChain, SandboxScaleError } from './base';

/**
 * L2: the node-local gateway found no warm VM on its node. The caller falls back to the L1
 * Kubernetes claim path; test it with `isFallback`, never by identity, so wrapping still matches.
 */
export class NoNodeCapacityError extends SandboxScaleError {
  constructor(message = 'no warm capacity on this node: fall back to the cluster claim path', options: { cause?: unknown } = {}) {
    super(message, options);
  }
}

/** True when err, or anything in its cause chain, is NoNodeCapacityError. */
export function isFallback(err: unknown): boolean {
  return findInCauseChain(err, 'NoNodeCapacityError') !== undefined;
}

/** How long a client should wait before retrying a claim that found no warm capacity. */
export const NO_WARM_CAPACITY_RETRY_AFTER_SECONDS = 1;

/**
 * L3: no node advertises warm capacity for the key, or every candidate raced to zero.
 * Retryable: the apiserver answers 503 ServiceUnavailable with Retry-After.
 */
export class NoWarmCapacityError extends SandboxScaleError {
  readonly key: PoolKeyLike | undefined;
  readonly retryAfterSeconds: number;
  constructor(key?: PoolKeyLike, options: { message?: string; retryAfterSeconds?: number; cause?: unknown } = {}) {
    super(options.message ?? describeNoWarmCapacity(key), { cause: options.cause });
    this.key = key;
    this.retryAfterSeconds = options.retryAfterSeconds ?? NO_WARM_CAPACITY_RETRY_AFTER_SECONDS;
  }
}

function describeNoWarmCapacity(key: PoolKeyLike | undefined): string {
  if (key === undefined) return 'no warm capacity: every warm node raced to zero; retry as warm capacity refills';
  const k = normalizePoolKey(key);
  return `no warm capacity for template "${k.template}", net "${k.net}", size "${k.size}": every warm node raced to zero; retry as warm capacity refills`;
}

/** True when err, or anything in its cause chain, is NoWarmCapacityError. */
export function isNoWarmCapacity(err: unknown): boolean {
  return findInCauseChain(err, 'NoWarmCapacityError') !== undefined;
}

/** The NoWarmCapacityError in err's cause chain, to read its key and retryAfterSeconds. */
export function noWarmCapacityOf(err: unknown): NoWarmCapacityError | undefined {
  return findInCauseChain<NoWarmCapacityError>(err, 'NoWarmCapacityError');
}

/**
 * Writes were asked of a component that has no way to reach the nodes: no fleet token or no
 * client factory. Fails closed (the reference calls sandboxd unauthenticated).
 */
export class ClaimRoutingNotConfiguredError extends SandboxScaleError {
  constructor(message = 'claim routing not configured: no sandboxd fleet token; refusing to call nodes unauthenticated') {
    super(message);
  }
}

export function isClaimRoutingNotConfigured(err: unknown): boolean {
  return findInCauseChain(err, 'ClaimRoutingNotConfiguredError') !== undefined;
}
