import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  Code,
  ConnectError,
  createConnectRouter,
  createContextKey,
  createContextValues,
  type HandlerContext,
  type Interceptor,
} from '@connectrpc/connect';
import { universalRequestFromNodeRequest, universalResponseToNodeResponse } from '@connectrpc/connect-node';
import { Filesystem } from '../gen/filesystem/filesystem_pb';
import { Process } from '../gen/process/process_pb';
import { serveRest, type FilesRestOptions } from './files-rest';
import { filesystemService } from './filesystem-service';
import type { EnvdGuest } from './guest';
import { processService } from './process-service';
import { UnknownUserError, userOf } from './user';

/** The largest RPC message read (a SendInput's stdin chunk is the biggest). */
export const MAX_RPC_MESSAGE_BYTES = 1 << 20;

export interface EnvdHandlerOptions extends FilesRestOptions {
  /** The sandbox a request reached (by its connection); undefined: none, and the call fails. */
  readonly guestOf: (req: IncomingMessage) => EnvdGuest | undefined;
  /** A request that failed unexpectedly (its connection is cut); a caller hanging up is not one. */
  readonly onError: (err: unknown) => void;
}

/**
 * envd as e2b's SDKs call it, as one node request handler: the Connect services
 * `process.Process` and `filesystem.Filesystem` (Connect protocol only, JSON or binary) and the
 * REST routes `/health` and `/files`.
 */
export function envdHandler(o: EnvdHandlerOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const guestKey = createContextKey<EnvdGuest | undefined>(undefined, { description: 'envd guest' });
  const guestOf = (ctx: HandlerContext): EnvdGuest => {
    const guest = ctx.values.get(guestKey);
    if (guest === undefined) throw new ConnectError('no sandbox behind this connection', Code.Unavailable);
    guest.touch();
    return guest;
  };
  // the user is checked on every RPC, though every user of the guest is the same account
  const users: Interceptor = (next) => (req) => {
    try {
      userOf(req.header.get('authorization') ?? undefined);
    } catch (err) {
      if (err instanceof UnknownUserError) throw new ConnectError(err.message, Code.InvalidArgument);
      throw err;
    }
    return next(req);
  };
  const router = createConnectRouter({
    connect: true,
    grpc: false,
    grpcWeb: false,
    readMaxBytes: MAX_RPC_MESSAGE_BYTES,
    jsonOptions: { ignoreUnknownFields: true },
    interceptors: [users],
  });
  router.service(Process, processService(guestOf));
  router.service(Filesystem, filesystemService(guestOf));
  const rpcs = new Map(router.handlers.map((h) => [h.requestPath, h]));
  // connect-node's own adapter, but a failure is the host's to log, and a caller that hung up
  // mid-stream is no failure at all
  return (req, res) => {
    const rpc = rpcs.get((req.url ?? '').split('?', 1)[0] ?? '');
    if (rpc === undefined) {
      void serveRest(o.guestOf(req), req, res, o).catch((err: unknown) => {
        o.onError(err);
        res.destroy();
      });
      return;
    }
    const uReq = universalRequestFromNodeRequest(req, res, undefined, createContextValues().set(guestKey, o.guestOf(req)));
    rpc(uReq)
      .then((uRes) => universalResponseToNodeResponse(uRes, res))
      .catch((err: unknown) => {
        if (res.destroyed || req.destroyed || ConnectError.from(err).code === Code.Aborted) return;
        o.onError(err);
      });
  };
}
