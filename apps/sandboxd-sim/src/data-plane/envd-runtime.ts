import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { envdHandler, EnvdState } from '@sandbox-scale/e2b-protocol';
export { ENVD_PORT } from '@sandbox-scale/e2b-protocol';
import { guardRequests, readBounded } from '@sandbox-scale/kube-runtime';
import type { SandboxAccess } from './access';
import type { DataPlane } from './data-plane';
import { SimEnvdGuest } from './envd-guest';
import { UPLOAD_LIMIT_BYTES } from './guest-runtime';

/**
 * envd on guest port 49983, over the sandbox's root, as a stand-in for a template image that
 * ships envd: like the runtime on 8888, a node:http server that never listens; each relayed
 * connection is handed to it and remembered with its sandbox. What envd keeps per sandbox
 * (running commands, polled watchers) lives until the sandbox is discarded.
 */
export class EnvdRuntime {
  readonly #server: Server;
  readonly #owners = new WeakMap<Socket, SimEnvdGuest>();
  readonly #states = new Map<string, EnvdState>();

  constructor(dp: DataPlane) {
    const handler = envdHandler({
      guestOf: (req: IncomingMessage) => this.#owners.get(req.socket),
      maxUploadBytes: UPLOAD_LIMIT_BYTES,
      readBody: readBounded,
      onError: (err) => dp.logger.warn({ err }, 'envd request failed'),
    });
    this.#server = createServer(
      guardRequests(async (req, res) => handler(req, res), {
        log: dp.logger,
        fail: (res) => {
          res.writeHead(500, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ code: 500, message: 'internal error' }));
        },
      }),
    );
    dp.onDiscard((id) => {
      this.#states.get(id)?.close();
      this.#states.delete(id);
    });
  }

  accept(socket: Socket, access: SandboxAccess): void {
    let state = this.#states.get(access.sb.id);
    if (state === undefined) this.#states.set(access.sb.id, (state = new EnvdState()));
    this.#owners.set(socket, new SimEnvdGuest(access, state));
    this.#server.emit('connection', socket);
  }
}

const runtimes = new WeakMap<DataPlane, EnvdRuntime>();

export function envdRuntimeOf(dp: DataPlane): EnvdRuntime {
  let rt = runtimes.get(dp);
  if (rt === undefined) {
    rt = new EnvdRuntime(dp);
    runtimes.set(dp, rt);
  }
  return rt;
}
