import type { ClientRequest } from 'node:http';

/**
 * Settles once `req` has handed its socket back to its agent; call it as the request is made.
 *
 * A reply can end before the request's own 'finish' event: under load the write's completion and
 * the whole reply are read in one turn of the event loop, and Node then frees a kept-alive socket
 * only at 'finish'. A caller that sends its next request as soon as the reply ends finds no free
 * socket and opens a new connection (a TLS handshake) while the old one goes idle. The request's
 * 'close' is emitted just before the socket's 'free', in the same tick, so a caller that waits
 * for this promise continues once the socket can be reused.
 */
export function socketReleased(req: ClientRequest): Promise<void> {
  return new Promise<void>((resolve) => req.once('close', () => resolve()));
}
