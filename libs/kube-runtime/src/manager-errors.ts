import { SandboxScaleError, findInCauseChain } from '@sandbox-scale/scale-core';

/** The Lease was not renewed in time: another replica may be leading now, so this one must stop. */
export class LeaderElectionLostError extends SandboxScaleError {}

/** A runnable's start() rejected while the manager was running. */
export class RunnableFailedError extends SandboxScaleError {
  constructor(
    readonly runnable: string,
    cause: unknown,
  ) {
    super(`runnable ${runnable} failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/** Stopping took longer than the graceful shutdown timeout; work may have been cut short. */
export class ShutdownTimeoutError extends SandboxScaleError {}

export function isLeaderElectionLost(err: unknown): boolean {
  return findInCauseChain(err, 'LeaderElectionLostError') !== undefined;
}

export function isRunnableFailed(err: unknown): boolean {
  return findInCauseChain(err, 'RunnableFailedError') !== undefined;
}

export function isShutdownTimeout(err: unknown): boolean {
  return findInCauseChain(err, 'ShutdownTimeoutError') !== undefined;
}
