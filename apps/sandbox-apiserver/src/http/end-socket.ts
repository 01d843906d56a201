import type { Duplex } from 'node:stream';

/** How long a refused socket has to take its answer before it is destroyed. */
const REFUSED_SOCKET_GRACE_MS = 5_000;

/**
 * Ends a refused socket with `data` and destroys it once the data is out: a client that never
 * closes its side (or never reads) must not keep the socket, and so a file descriptor, here.
 */
export function endAndDestroy(socket: Duplex, data: Buffer): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const timer = setTimeout(() => socket.destroy(), REFUSED_SOCKET_GRACE_MS);
  timer.unref();
  socket.end(data, () => {
    clearTimeout(timer);
    socket.destroy();
  });
}
