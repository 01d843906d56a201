import { request as httpRequest, type ClientRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { pipeline, type Duplex } from 'node:stream';
import { forwardedRequestHeaders, forwardedResponseHeaders, forwardedUpgradeHeaders, type RawHeaders } from './forward-headers';
import { boundRelay, type RelayBounds } from '../data-plane/relay-bounds';
import { RouterError } from './router-errors';

export interface RelayOptions {
  /** The guest port, named in the Host header the guest sees. */
  readonly port: number;
  /** The Sandbox's name, for the caller's error detail. */
  readonly name: string;
  /** Fires when the guest has taken too long to answer (until its response headers arrive). */
  readonly deadline: AbortSignal;
  /** Longest pause of the guest's response body before the relay is cut. */
  readonly idleTimeoutMs: number;
  /** Bounds of a joined (upgraded) connection: closed when idle this long either way, or when this old. */
  readonly upgraded?: RelayBounds;
  /** Request headers (lower case) that stop here besides the router's own: a credential of this hop. */
  readonly droppedHeaders?: ReadonlySet<string>;
}

const unreachable = (name: string, cause: unknown): RouterError =>
  new RouterError(502, `Could not connect to the backend sandbox: ${name}`, { cause });

const timedOut = (name: string): RouterError => new RouterError(504, `Timed out waiting for the backend sandbox: ${name}`);

/**
 * One request to the guest over `guest`, a socket of its own that closes with the request. A
 * target the server's parser let through but a client may not send (raw bytes outside ASCII) is
 * the caller's 400, and the socket is given up.
 */
function guestRequest(req: IncomingMessage, guest: Socket, o: RelayOptions, isUpgrade: boolean): ClientRequest {
  try {
    return httpRequest({
      createConnection: () => guest,
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      headers: forwardedRequestHeaders(req.rawHeaders, o.port, isUpgrade, o.droppedHeaders),
      setHost: false,
    });
  } catch (err) {
    guest.destroy();
    throw new RouterError(400, 'The request target or a header cannot be sent on as it is.', { cause: err });
  }
}

/**
 * Sends the request on to the guest over `guest` and streams the guest's answer back, both bodies
 * piped (never buffered). Resolves once the answer is relayed or the caller went away; rejects with
 * a RouterError 502 when the guest closed without answering, 504 when `deadline` fired first. A
 * failure after the answer began cuts the caller's connection, the only way left to say so.
 */
export function relayRequest(req: IncomingMessage, res: ServerResponse, guest: Socket, o: RelayOptions): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let answered = false;
    const up = guestRequest(req, guest, o, false);
    const cut = (): void => {
      up.destroy();
      guest.destroy();
    };
    const onDeadline = (): void => {
      if (answered) return;
      cut();
      reject(timedOut(o.name));
    };
    if (o.deadline.aborted) return onDeadline();
    o.deadline.addEventListener('abort', onDeadline, { once: true });
    up.on('response', (upRes: IncomingMessage) => {
      answered = true;
      o.deadline.removeEventListener('abort', onDeadline);
      guest.setTimeout(o.idleTimeoutMs, () => {
        cut();
        res.destroy();
      });
      res.writeHead(upRes.statusCode ?? 502, upRes.statusMessage, forwardedResponseHeaders(upRes.rawHeaders));
      pipeline(upRes, res, (err) => {
        if (err) cut();
        resolve();
      });
    });
    up.on('error', (err: Error) => {
      o.deadline.removeEventListener('abort', onDeadline);
      if (!answered) reject(unreachable(o.name, err));
      else res.destroy();
    });
    // the caller went away: nobody waits for the guest any more
    res.once('close', () => {
      if (!res.writableFinished) cut();
      if (!answered) {
        o.deadline.removeEventListener('abort', onDeadline);
        resolve();
      }
    });
    pipeline(req, up, (err) => {
      if (err) up.destroy();
    });
  });
}

const headerBlock = (raw: RawHeaders): string => {
  let out = '';
  for (let i = 0; i + 1 < raw.length; i += 2) out += `${raw[i]}: ${raw[i + 1]}\r\n`;
  return out;
};

/**
 * Joins two sockets both ways, each direction ended on its own EOF; resolves when both are closed.
 * With bounds, both are closed once no byte went either way for `idleTimeoutMs` (a byte relayed is
 * activity on both sockets), or `maxDurationMs` after they were joined.
 */
function splice(a: Duplex, b: Socket, bounds?: RelayBounds): Promise<void> {
  return new Promise<void>((resolve) => {
    let open = 2;
    const closed = (): void => {
      open -= 1;
      if (open === 0) resolve();
    };
    const fail = (): void => {
      a.destroy();
      b.destroy();
    };
    if (bounds !== undefined) boundRelay(a, b, bounds);
    a.once('close', closed);
    b.once('close', closed);
    a.once('error', fail);
    b.once('error', fail);
    a.pipe(b);
    b.pipe(a);
  });
}

/**
 * An upgrade request (a WebSocket, say) relayed to the guest: once the guest switches protocols
 * its 101 goes to the caller and the two connections are joined byte for byte, until either side
 * closes, or `o.upgraded`'s idle or maximum time passes. A guest that answers
 * anything else has that answer relayed and the connection closed. Rejects as relayRequest.
 */
export function relayUpgrade(req: IncomingMessage, client: Duplex, head: Buffer, guest: Socket, o: RelayOptions): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let answered = false;
    const up = guestRequest(req, guest, o, true);
    const onDeadline = (): void => {
      if (answered) return;
      up.destroy();
      guest.destroy();
      reject(timedOut(o.name));
    };
    if (o.deadline.aborted) return onDeadline();
    o.deadline.addEventListener('abort', onDeadline, { once: true });
    const settle = (): void => {
      answered = true;
      o.deadline.removeEventListener('abort', onDeadline);
    };
    up.on('upgrade', (upRes: IncomingMessage, upSocket: Socket, upHead: Buffer) => {
      settle();
      client.write(
        `HTTP/1.1 101 ${upRes.statusMessage || 'Switching Protocols'}\r\n${headerBlock(forwardedUpgradeHeaders(upRes.rawHeaders))}\r\n`,
      );
      if (upHead.length > 0) client.write(upHead);
      if (head.length > 0) upSocket.write(head);
      splice(client, upSocket, o.upgraded).then(resolve, resolve);
    });
    up.on('response', (upRes: IncomingMessage) => {
      settle();
      const headers = [...forwardedResponseHeaders(upRes.rawHeaders), 'Connection', 'close'];
      client.write(`HTTP/1.1 ${upRes.statusCode ?? 502} ${upRes.statusMessage ?? ''}\r\n${headerBlock(headers)}\r\n`);
      // without Content-Length the body runs to the close, which is a framing HTTP/1.1 allows a response
      pipeline(upRes, client, () => {
        guest.destroy();
        resolve();
      });
    });
    up.on('error', (err: Error) => {
      if (answered) return void client.destroy();
      settle();
      reject(unreachable(o.name, err));
    });
    client.once('close', () => {
      if (answered) return;
      settle();
      up.destroy();
      guest.destroy();
      resolve();
    });
    up.end();
  });
}
