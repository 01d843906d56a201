import type { Duplex } from 'node:stream';
import type { Socket } from 'node:net';
import { BadRequestError } from '@sandbox-scale/scale-core';
import type { DataPlaneAudit } from './data-plane-audit';
import { reach, type SandboxResolver } from './reach';
import { boundRelay, DEFAULT_RELAY_BOUNDS, type RelayBounds } from './relay-bounds';

/** How long opening the node's relay may take (the node wakes a paused sandbox meanwhile). */
const OPEN_TIMEOUT_MS = 30_000;

/** `?port=N`: a guest TCP port, 1–65535. */
export function guestPort(raw: string | null): number {
  if (raw === null || raw === '') throw new BadRequestError('port is required (?port=8080)');
  if (!/^[0-9]{1,5}$/.test(raw) || Number(raw) < 1 || Number(raw) > 65535)
    throw new BadRequestError(`port ${JSON.stringify(raw)} is not a TCP port (1-65535)`);
  return Number(raw);
}

/**
 * sandboxes/{name}/portforward?port=N: a raw byte relay to one guest port, through the node's
 * port relay with the sandbox's token. Opening it is what is counted and audited; the bytes
 * that follow are the caller's own.
 */
export class PortForwardStorage {
  constructor(
    private readonly resolver: SandboxResolver,
    private readonly audit: DataPlaneAudit,
    /** How long an open port-forward may idle, and live. */
    readonly bounds: RelayBounds = DEFAULT_RELAY_BOUNDS,
  ) {}

  /** The node's relayed socket to the guest port; a refusal is the Status naming the sandbox and the cause. */
  async open(namespace: string, name: string, port: number, caller: { user: string; signal?: AbortSignal }): Promise<Socket> {
    const signal =
      caller.signal === undefined
        ? AbortSignal.timeout(OPEN_TIMEOUT_MS)
        : AbortSignal.any([caller.signal, AbortSignal.timeout(OPEN_TIMEOUT_MS)]);
    return this.audit.observe(
      'portforward',
      { user: caller.user, namespace, name, port },
      (outcome) =>
        reach(this.resolver, { namespace, name, what: `port ${port}` }, (s) => s.client.openPort(s.id, s.token, port, { signal }), {
          signal,
          where: (s) => Object.assign(outcome, { node: s.node, sandboxId: s.id }),
        }),
      101,
    );
  }
}

/**
 * Relays bytes both ways between the caller's socket and the node's, each direction until its
 * own end (a half-close passes through: the caller may end its side and still read the reply).
 * A failure or a full close of either side ends both, and so do `bounds`' idle and maximum time.
 */
export function relay(caller: Duplex, upstream: Socket, bounds: RelayBounds): void {
  boundRelay(caller, upstream, bounds);
  const endBoth = (): void => {
    caller.destroy();
    upstream.destroy();
  };
  caller.on('error', endBoth);
  upstream.on('error', endBoth);
  // a side that closes before its end of data was cut off, and cuts the other off; one that
  // ended first has passed its end on already, and the other side finishes what it sends
  caller.on('close', () => {
    if (!caller.readableEnded) upstream.destroy();
  });
  upstream.on('close', () => {
    if (!upstream.readableEnded) caller.destroy();
  });
  caller.pipe(upstream);
  upstream.pipe(caller);
}
