import { SandboxScaleError, findInCauseChain } from '@sandbox-scale/scale-core';

/**
 * An error retrying cannot fix (invalid spec, missing permission by design): counted and
 * logged, the key is not requeued. A later change to the object enqueues it again.
 */
export class TerminalError extends SandboxScaleError {}

export function isTerminalError(err: unknown): boolean {
  return findInCauseChain(err, 'TerminalError') !== undefined;
}
