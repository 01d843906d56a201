import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import type { CallDeadline } from './deadline-signals';
import { errorMessage } from './decode';
import { SandboxdHttpError, SandboxdTransportError } from './errors';
import { ERROR_BODY_LIMIT_BYTES } from './transport';

export interface UpgradeSpec {
  operation: string;
  /** The node's base URL (`http://host:port[/prefix]`). */
  baseUrl: string;
  path: string;
  /** The `Upgrade` protocol: `tcp` for a port relay, `silkd` for the agent. */
  protocol: string;
  token: string;
  signal?: AbortSignal | undefined;
  deadline?: CallDeadline | undefined;
}

/**
 * One upgrade request on its own connection (a relay holds its socket for as long as it runs, so
 * it never comes from a keep-alive pool). Resolves with the raw socket after `101`, any bytes that
 * came with the 101 put back in front; any other status is a SandboxdHttpError with the node's
 * message. The signal bounds the opening only: the socket, once handed over, is the caller's.
 */
export function openUpgrade(spec: UpgradeSpec): Promise<Socket> {
  const url = new URL(spec.baseUrl.replace(/\/+$/, '') + spec.path);
  const abortReason = (): unknown => (spec.signal?.aborted ? spec.signal.reason : spec.deadline?.reason);
  if (spec.signal?.aborted || spec.deadline?.aborted) return Promise.reject(abortReason());
  const headers: Record<string, string> = { connection: 'Upgrade', upgrade: spec.protocol };
  if (spec.token !== '') headers.authorization = `Bearer ${spec.token}`;
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const req = send(url, { method: 'GET', headers, agent: false });
  return new Promise<Socket>((resolve, reject) => {
    let settled = false;
    const onAbort = (): void => {
      finish();
      req.destroy();
      reject(abortReason());
    };
    const finish = (): void => {
      settled = true;
      spec.signal?.removeEventListener('abort', onAbort);
      spec.deadline?.removeListener('abort', onAbort);
    };
    spec.signal?.addEventListener('abort', onAbort, { once: true });
    spec.deadline?.once('abort', onAbort);
    req.on('upgrade', (_res: IncomingMessage, socket: Socket, head: Buffer) => {
      if (settled) return void socket.destroy();
      finish();
      if (head.length > 0) socket.unshift(head);
      resolve(socket);
    });
    req.on('response', (res: IncomingMessage) => {
      if (settled) return void res.destroy();
      finish();
      readError(res).then(
        (body) => reject(refusal(spec.operation, res, body)),
        () => reject(refusal(spec.operation, res, undefined)),
      );
    });
    req.on('error', (err: Error) => {
      if (settled) return;
      finish();
      reject(new SandboxdTransportError({ operation: spec.operation, url: url.origin + url.pathname, cause: err }));
    });
    req.end();
  });
}

function refusal(operation: string, res: IncomingMessage, body: Buffer | undefined): SandboxdHttpError {
  const statusCode = res.statusCode ?? 0;
  const retry = Number(res.headers['retry-after']);
  return new SandboxdHttpError({
    operation,
    statusCode,
    message: errorMessage({ statusCode, success: false, body, retryAfterSeconds: undefined }),
    ...(Number.isFinite(retry) && res.headers['retry-after'] !== undefined ? { retryAfterSeconds: retry } : {}),
  });
}

/** The error body, up to the error cap; past it the connection is closed and the message is unknown. */
async function readError(res: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of res) {
    const buf = chunk as Buffer;
    total += buf.length;
    if (total > ERROR_BODY_LIMIT_BYTES) {
      res.destroy();
      return undefined;
    }
    chunks.push(buf);
  }
  return Buffer.concat(chunks, total);
}
