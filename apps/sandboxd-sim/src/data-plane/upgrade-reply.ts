import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';

/** An HTTP answer written on the raw socket, which is then closed (no upgrade happened). */
export function rawReply(socket: Socket, status: number, message: string, headers: Readonly<Record<string, string>> = {}): void {
  if (socket.destroyed) return;
  const body = JSON.stringify({ error: message });
  const extra = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
      `connection: close\r\n${extra}\r\n${body}`,
  );
}

/** The 101 that turns the connection into a relay. */
export function switchProtocols(socket: Socket, protocol: string): void {
  socket.write(`HTTP/1.1 101 Switching Protocols\r\nconnection: Upgrade\r\nupgrade: ${protocol}\r\n\r\n`);
}
