import type { Socket } from 'node:net';
import type { KubeConfig } from '@kubernetes/client-node';
import { SdkError, toSdkError, type RequestTarget } from './errors';
import { authenticated, errorOf, sendOn } from './kube-stream';

export interface UpgradeRequest {
  path: string;
  query?: Record<string, string | number | undefined>;
  /** The protocol named in the Upgrade header: `tcp` is a raw byte relay. */
  protocol: string;
  /** Cancels the opening only; the socket it resolves with is the caller's to end. */
  signal?: AbortSignal;
}

/**
 * Opens an HTTP/1.1 upgrade through kube-apiserver and resolves with the raw socket after the
 * 101, any bytes that came with the 101 pushed back onto it. POST, not GET: kube-apiserver
 * authorizes the verb from the method, and RBAC grants the subresource to `create`.
 * A Content-Length of 0 keeps the request unchunked, so no chunk terminator follows the
 * headers into the relayed stream.
 */
export async function openUpgrade(kc: KubeConfig, req: UpgradeRequest, target: RequestTarget): Promise<Socket> {
  const auth = await authenticated(kc, 'POST', req.path, req.query);
  return new Promise<Socket>((resolve, reject) => {
    let answered = false;
    const r = sendOn(auth, 'POST', { Connection: 'Upgrade', Upgrade: req.protocol, 'Content-Length': 0 }, req.signal);
    r.on('upgrade', (res, socket: Socket, head: Buffer) => {
      answered = true;
      const upgradedTo = String(res.headers.upgrade ?? '').toLowerCase();
      if (res.statusCode !== 101 || upgradedTo !== req.protocol.toLowerCase()) {
        socket.destroy();
        reject(new SdkError(`${target.resource} "${target.name ?? ''}": the server switched to "${upgradedTo}", not ${req.protocol}`));
        return;
      }
      // kept-alive agents give their sockets an idle timeout; a relay is idle for as long as its user likes
      socket.setTimeout(0);
      // the relay decides when this side stops sending; the far side's EOF must not end it first
      socket.allowHalfOpen = true;
      if (head.length > 0) socket.unshift(head);
      resolve(socket);
    });
    r.on('response', (res) => {
      answered = true;
      void errorOf(res, target, req.signal).then(reject);
    });
    r.on('error', (err) => {
      if (!answered) reject(toSdkError(err, target, req.signal));
    });
    r.end();
  });
}
