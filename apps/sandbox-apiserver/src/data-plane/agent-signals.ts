/** How long one agent call (a stat, a listing, a mkdir, a delete, opening the connection) may take. */
export const AGENT_CALL_TIMEOUT_MS = 30_000;

/**
 * The signals agent calls carry: every call ends when the caller hangs up, and a call that only
 * asks (stat, list, mkdir, remove) also when the guest has not answered in time, so a guest that
 * never answers holds no request. Transfers (a file's bytes) go at the pace of the data instead.
 */
export interface AgentSignals {
  /** For one call that only asks: the caller's signal and a timeout. */
  call(): { signal: AbortSignal };
  /** For a transfer: the caller's signal only. */
  readonly transfer: { signal?: AbortSignal };
}

export function agentSignals(caller: AbortSignal | undefined, timeoutMs = AGENT_CALL_TIMEOUT_MS): AgentSignals {
  return {
    call: () => ({ signal: caller ? AbortSignal.any([caller, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs) }),
    transfer: caller ? { signal: caller } : {},
  };
}

/** The reason AbortSignal.timeout aborts with. */
export function isCallTimeout(err: unknown): boolean {
  return err instanceof DOMException && err.name === 'TimeoutError';
}
