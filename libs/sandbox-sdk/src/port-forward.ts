import { once } from 'node:events';
import * as net from 'node:net';
import type { Duplex } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { InvalidArgumentError } from './errors';

/** A local listener relayed to a port of a sandbox; one relay per accepted connection. */
export interface PortForward {
  /** The port it listens on (the one asked for, or the one the system chose for 0). */
  readonly localPort: number;
  /** `127.0.0.1:<localPort>`. */
  readonly address: string;
  /** Stops listening and ends every open relay; resolves once the listener is closed. */
  close(): Promise<void>;
  /** Resolves once the listener is closed, by close() or by the signal. */
  readonly closed: Promise<void>;
}

export interface ListenOptions {
  /** 0 or absent: a free port the system chooses. */
  localPort?: number;
  /** Default 127.0.0.1: only this machine can use the forward. */
  host?: string;
  /** Aborting it closes the listener and every relay, as close() does. */
  signal?: AbortSignal;
  /**
   * A connection whose relay could not be opened (the sandbox refused it, nothing listens on
   * the port): it is reset and the listener goes on. A relay that breaks later ends both sides,
   * as a TCP connection would, without a report.
   */
  onConnectionError?: (err: unknown) => void;
}

/** Opens the far side of one relay. */
export type Dial = (signal: AbortSignal) => Promise<Duplex>;

export function checkPort(what: string, port: number, min = 1): void {
  if (!Number.isInteger(port) || port < min || port > 65535)
    throw new InvalidArgumentError(`${what} must be a whole number in ${min}-65535, got ${String(port)}`);
}

/**
 * Relays bytes both ways between a local connection and a sandbox's port. kube-apiserver's
 * upgrade proxy cannot carry a half-close: it ends both directions as soon as either ends, so
 * passing on a local client's EOF (an HTTP/1.0 client, `nc -N`) would lose the reply. The local
 * EOF is therefore held, and the relay ends when the sandbox's side ends: its EOF is passed on
 * to the local client (after everything before it), and an error on either side ends both.
 */
export async function relay(local: Duplex, remote: Duplex): Promise<void> {
  local.on('error', () => remote.destroy());
  // a write the sandbox's side can no longer take (it has ended) is dropped, not thrown
  remote.on('error', () => local.destroy());
  local.pipe(remote, { end: false });
  try {
    await pipeline(remote, local);
  } finally {
    local.unpipe(remote);
    remote.destroy();
    // what the client still sends has nowhere to go; read and drop it until it closes
    local.resume();
  }
}

/**
 * Listens on host:localPort; each accepted connection opens its own relay with `dial` and
 * pipes bytes both ways (see relay for how a half-close is handled). A connection that arrives while its relay is being
 * opened is paused, so nothing it sends first is lost.
 */
export async function listenForward(dial: Dial, o: ListenOptions = {}): Promise<PortForward> {
  checkPort('the local port', o.localPort ?? 0, 0);
  const host = o.host ?? '127.0.0.1';
  const stop = new AbortController();
  const open = new Set<Duplex>();
  const server = net.createServer({ allowHalfOpen: true, pauseOnConnect: true }, (local) => {
    open.add(local);
    local.once('close', () => open.delete(local));
    void handle(local);
  });
  const report = (err: unknown): void => {
    if (!stop.signal.aborted) o.onConnectionError?.(err);
  };
  const handle = async (local: net.Socket): Promise<void> => {
    local.on('error', () => local.destroy());
    let remote: Duplex;
    try {
      remote = await dial(stop.signal);
    } catch (err) {
      local.resetAndDestroy();
      report(err);
      return;
    }
    open.add(remote);
    remote.once('close', () => open.delete(remote));
    if (local.destroyed) {
      remote.destroy();
      return;
    }
    await relay(local, remote).catch(() => undefined);
  };
  const closed = once(server, 'close').then(() => undefined);
  const close = async (): Promise<void> => {
    stop.abort();
    server.close();
    for (const s of open) s.destroy();
    await closed;
  };
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: o.localPort ?? 0, host }, () => {
      server.off('error', reject);
      // accept failures (out of file descriptors) are a connection lost, not the end of the listener
      server.on('error', report);
      resolve();
    });
  });
  const address = server.address();
  const localPort = typeof address === 'object' && address !== null ? address.port : (o.localPort ?? 0);
  if (o.signal?.aborted) await close();
  else o.signal?.addEventListener('abort', () => void close(), { once: true });
  return { localPort, address: `${host}:${localPort}`, close, closed };
}
