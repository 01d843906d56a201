import { connect, type Socket } from 'node:net';
import { PORT_UPGRADE_PROTOCOL } from '@sandbox-scale/sandboxd-client';
import { ApiError } from '../api-error';
import type { SandboxAccess } from './access';
import { ENVD_PORT, envdRuntimeOf } from './envd-runtime';
import { guestRuntimeOf } from './guest-runtime';
import { ownsListener } from './port-owner';
import { switchProtocols } from './upgrade-reply';

/** The guest port served by the built-in guest runtime (the port agent-sandbox's clients use). */
export const GUEST_RUNTIME_PORT = 8888;
const HOST = '127.0.0.1';

/**
 * Relays an upgraded connection to a guest port: 8888 to the built-in guest runtime and 49983 to
 * the built-in envd, both over the sandbox's root; any other port to 127.0.0.1:{port} on the simulator's host when a process the
 * sandbox started listens there (so a server that exec started is reachable, and no other
 * sandbox's or the host's). Nothing of the sandbox listening is 502 before the 101. Each direction is closed
 * on its own EOF (half-close), and the relay holds the sandbox's idle clock while it is open.
 */
export async function relayPort(access: SandboxAccess, socket: Socket, head: Buffer, port: number): Promise<void> {
  if (port === GUEST_RUNTIME_PORT || port === ENVD_PORT) {
    switchProtocols(socket, PORT_UPGRADE_PROTOCOL);
    access.dp.attach(access.sb.id, socket);
    if (head.length > 0) socket.unshift(head);
    (port === ENVD_PORT ? envdRuntimeOf(access.dp) : guestRuntimeOf(access.dp)).accept(socket, access);
    return;
  }
  // the host's loopback is every sandbox's: only a listener of this sandbox's own processes is its port
  if (!(await ownsListener(access.dp.groups.pids(access.sb.id), port, access.owner)))
    throw new ApiError(502, `nothing listening on guest port ${port} (no process of the sandbox listens there)`);
  const upstream = await connectHost(port);
  if (socket.destroyed) return void upstream.destroy();
  switchProtocols(socket, PORT_UPGRADE_PROTOCOL);
  access.dp.attach(access.sb.id, socket);
  access.dp.attach(access.sb.id, upstream);
  if (head.length > 0) upstream.write(head);
  splice(socket, upstream);
}

function connectHost(port: number): Promise<Socket> {
  return new Promise<Socket>((resolve, reject) => {
    const upstream = connect({ host: HOST, port, allowHalfOpen: true });
    upstream.once('connect', () => {
      upstream.removeAllListeners('error');
      resolve(upstream);
    });
    upstream.once('error', (err: NodeJS.ErrnoException) => {
      upstream.destroy();
      reject(new ApiError(502, `nothing listening on guest port ${port} (${err.code ?? err.message})`));
    });
  });
}

/** Bytes both ways; an EOF ends only its own direction, an error or a reset ends both. */
function splice(a: Socket, b: Socket): void {
  const both = (): void => {
    a.destroy();
    b.destroy();
  };
  a.on('error', both);
  b.on('error', both);
  a.on('close', () => b.destroy());
  b.on('close', () => a.destroy());
  a.pipe(b);
  b.pipe(a);
}
