/**
 * Anything the manager runs. start() runs until the signal aborts and then resolves; an early
 * rejection is fatal for the process (the manager shuts everything down and reports it).
 */
export interface Runnable {
  readonly name: string;
  /** Leader-only runnables start after the Lease is won (default true, as controller-runtime). */
  readonly needLeaderElection?: boolean;
  start(signal: AbortSignal): Promise<void>;
  /** Finishes queued work after stop (e.g. an async record queue); bounded by the shutdown timeout. */
  drain?(): Promise<void>;
}
