import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

/** How long a joined connection (a port-forward, an upgraded router relay) may live. */
export interface RelayBounds {
  /** Closed once no byte went either way for this long. */
  readonly idleTimeoutMs: number;
  /** Closed this long after it was joined, however busy. */
  readonly maxDurationMs: number;
}

/** A port-forward or an upgraded relay with no byte either way for 30 minutes is closed. */
export const DEFAULT_RELAY_BOUNDS: RelayBounds = { idleTimeoutMs: 30 * 60_000, maxDurationMs: 4 * 60 * 60_000 };

/**
 * Bounds a connection joined to a node's (or a guest's) socket: both are destroyed once
 * `upstream` saw no byte either way for the idle time (every byte relayed passes through it), or
 * at the maximum age. Nothing is held once either closes.
 */
export function boundRelay(caller: Duplex, upstream: Socket, bounds: RelayBounds): void {
  const end = (): void => {
    caller.destroy();
    upstream.destroy();
  };
  upstream.setTimeout(bounds.idleTimeoutMs, end);
  const maxTimer = setTimeout(end, bounds.maxDurationMs);
  maxTimer.unref();
  const done = (): void => clearTimeout(maxTimer);
  caller.once('close', done);
  upstream.once('close', done);
}
