import { findInCauseChain, SandboxScaleError } from '@sandbox-scale/scale-core';

/**
 * The object a record was meant for is not the one stored under that name: the claim was
 * deleted and created again (another uid), or a claim of the name was created by someone
 * else before the fast-path record. Nothing is written to it.
 */
export class ClaimOwnerMismatchError extends SandboxScaleError {}

/** The claim is already Bound to another sandbox; its record is never overwritten. */
export class ClaimBoundElsewhereError extends SandboxScaleError {}

/** A Secret of the token's name exists and is not controlled by the claim; it is never taken over. */
export class SecretNotOwnedError extends SandboxScaleError {}

/** The record can never land on this object: retrying would not help, and nothing was written. */
export function isForeignRecordTarget(err: unknown): boolean {
  return ['ClaimOwnerMismatchError', 'ClaimBoundElsewhereError', 'SecretNotOwnedError'].some((n) => findInCauseChain(err, n) !== undefined);
}

export function isClaimOwnerMismatch(err: unknown): boolean {
  return findInCauseChain(err, 'ClaimOwnerMismatchError') !== undefined;
}
