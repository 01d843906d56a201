import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from '@sandbox-scale/kube-runtime';
import { requestUrl } from '@sandbox-scale/kube-runtime';
import { BadRequestError, StatusError } from '@sandbox-scale/scale-core';
import type { UserInfo } from '../authn/user-info';
import { requestInfoOf, SANDBOXES, type RequestInfo } from '../http/request-info';
import { endAndDestroy } from '../http/end-socket';
import { statusOf } from '../http/status';
import { guestPort, relay, type PortForwardStorage } from './portforward';

/** What an upgrade needs of the server around it: the same authentication and authorization as every request. */
export interface UpgradeGate {
  /** The caller, or undefined for anonymous (refused). */
  authenticate(req: IncomingMessage): Promise<UserInfo | undefined>;
  /** Throws the 403 when RBAC refuses. */
  authorize(user: UserInfo, info: RequestInfo): Promise<void>;
  /** Throws a 503 while the server cannot serve yet (caches not synced, shutting down). */
  ready(): void;
  /** Holds one of the caller's concurrency slots until the returned release is called (429 past the cap). */
  acquire(user: UserInfo, namespace: string): () => void;
}

/** Writes a Status as a plain HTTP/1.1 answer on the raw socket of a refused upgrade, and closes it. */
export function refuseUpgrade(socket: Duplex, err: unknown): number {
  const status = statusOf(err);
  const body = Buffer.from(JSON.stringify(status));
  const retry = status.details?.retryAfterSeconds ?? (status.code === 503 || status.code === 429 ? 1 : undefined);
  const head = [
    `HTTP/1.1 ${status.code} ${STATUS_CODES[status.code] ?? 'Error'}`,
    'Content-Type: application/json',
    `Content-Length: ${body.length}`,
    'Connection: close',
    ...(retry !== undefined ? [`Retry-After: ${retry}`] : []),
  ];
  // destroyed once the answer is out: a client that never closes its side keeps nothing here
  endAndDestroy(socket, Buffer.concat([Buffer.from(`${head.join('\r\n')}\r\n\r\n`), body]));
  return status.code;
}

const upgradeProtocol = (req: IncomingMessage): string => (req.headers.upgrade ?? '').trim().toLowerCase();

/**
 * The one upgrade served: GET or POST sandboxes/{name}/portforward?port=N with `Upgrade: tcp`,
 * after the caller is authenticated and authorized (create sandboxes/portforward), exactly as a
 * request is. Anything else that asks for an upgrade is refused with a Status.
 */
export class UpgradeHandler {
  readonly #open = new Set<Duplex>();

  constructor(
    private readonly gate: UpgradeGate,
    private readonly portForward: Pick<PortForwardStorage, 'open' | 'bounds'>,
    private readonly log: Logger,
  ) {}

  /** The 'upgrade' listener of the server; it never throws. */
  handle(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => socket.destroy());
    this.#serve(req, socket, head).catch((err: unknown) => {
      const code = refuseUpgrade(socket, err);
      if (code >= 500) this.log.error({ err, method: req.method, path: req.url }, 'upgrade failed');
    });
  }

  /** Ends every relay still open (the server is stopping). */
  closeAll(): void {
    for (const s of this.#open) s.destroy();
    this.#open.clear();
  }

  async #serve(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const url = requestUrl(req.url, 'https://localhost');
    if (url === undefined) throw new BadRequestError('malformed request target');
    const user = await this.gate.authenticate(req);
    if (user === undefined) throw new StatusError('Unauthorized', 'Unauthorized');
    const info = requestInfoOf(req.method ?? 'GET', url);
    if (
      !info.isResource ||
      info.resource !== SANDBOXES ||
      info.subresource !== 'portforward' ||
      info.pathName === '' ||
      info.namespace === ''
    )
      throw new BadRequestError(`an upgrade is served only on ${SANDBOXES}/{name}/portforward`);
    if (req.method !== 'GET' && req.method !== 'POST')
      throw new StatusError('MethodNotAllowed', `${req.method ?? ''} is not supported on ${SANDBOXES}/portforward (served: GET, POST)`);
    if (upgradeProtocol(req) !== 'tcp')
      throw new BadRequestError(`${SANDBOXES}/portforward upgrades to tcp, not ${JSON.stringify(req.headers.upgrade ?? '')}`);
    await this.gate.authorize(user, info);
    this.gate.ready();
    const port = guestPort(url.searchParams.get('port'));
    const release = this.gate.acquire(user, info.namespace);
    socket.once('close', release);
    const hungUp = new AbortController();
    const onClose = (): void => hungUp.abort(new Error('the caller hung up'));
    socket.once('close', onClose);
    const upstream = await this.portForward.open(info.namespace, info.pathName, port, { user: user.username, signal: hungUp.signal });
    socket.off('close', onClose);
    if (socket.destroyed) {
      upstream.destroy();
      return;
    }
    // each direction ends on its own: the caller may end its side and still read the reply
    (socket as Duplex & { allowHalfOpen?: boolean }).allowHalfOpen = true;
    socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n');
    if (head.length > 0) upstream.write(head);
    this.#open.add(socket);
    socket.once('close', () => this.#open.delete(socket));
    relay(socket, upstream, this.portForward.bounds);
  }
}
