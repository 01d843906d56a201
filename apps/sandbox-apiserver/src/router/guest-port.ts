import type { Socket } from 'node:net';
import { statusErrorOf } from '@sandbox-scale/scale-core';
import { asSandboxdHttpError, isAbortError, type SandboxdClient } from '@sandbox-scale/sandboxd-client';
import { RouterError } from './router-errors';
import type { RoutingTarget } from './routing-headers';

/** A served sandbox's way in on its node (SandboxAccess is one): the client, its id there and its token. */
export interface SandboxResolver {
  resolve(
    namespace: string,
    name: string,
    signal?: AbortSignal,
  ): Promise<{ readonly client: Pick<SandboxdClient, 'openPort'>; readonly id: string; readonly token: string; readonly node: string }>;
  forget(node: string, id: string): void;
}

const notFound = (t: RoutingTarget): RouterError => new RouterError(404, `Sandbox "${t.name}" not found in namespace "${t.namespace}".`);

/** What a failure to reach the guest port answers; nothing a node said reaches the detail. */
function refusalOf(err: unknown, t: RoutingTarget, signal: AbortSignal): RouterError {
  if (signal.aborted || isAbortError(err))
    return new RouterError(504, `Timed out connecting to the backend sandbox: ${t.name}`, { cause: err });
  const node = asSandboxdHttpError(err);
  if (node?.statusCode === 404)
    return new RouterError(404, `Sandbox "${t.name}" not found in namespace "${t.namespace}": its node no longer has it.`, { cause: err });
  if (node?.statusCode === 503)
    return new RouterError(503, `The node of sandbox ${t.name} is busy, retry later.`, {
      retryAfterSeconds: node.retryAfterSeconds ?? 1,
      cause: err,
    });
  const status = node === undefined ? statusErrorOf(err) : undefined;
  if (status?.code === 404) return new RouterError(404, notFound(t).detail, { cause: err });
  // this server's own refusals (its cache not synced yet) say so in words of its own
  if (status?.code === 503 || status?.code === 429)
    return new RouterError(status.code, status.message, { retryAfterSeconds: status.details.retryAfterSeconds ?? 1, cause: err });
  return new RouterError(502, `Could not connect to the backend sandbox: ${t.name}`, { cause: err });
}

/**
 * A raw connection to the target's guest port through its node's `ports` relay, opened with the
 * sandbox's own token. A 404 from the node may mean a token read before the sandbox was replaced:
 * the token is forgotten and read once more before the sandbox counts as gone.
 */
export async function openGuestPort(access: SandboxResolver, t: RoutingTarget, signal: AbortSignal): Promise<Socket> {
  for (let attempt = 0; ; attempt++) {
    let found: Awaited<ReturnType<SandboxResolver['resolve']>>;
    try {
      found = await access.resolve(t.namespace, t.name, signal);
    } catch (err) {
      throw refusalOf(err, t, signal);
    }
    try {
      return await found.client.openPort(found.id, found.token, t.port, { signal });
    } catch (err) {
      const missing = asSandboxdHttpError(err)?.statusCode === 404;
      if (missing) access.forget(found.node, found.id);
      if (!missing || attempt > 0 || signal.aborted) throw refusalOf(err, t, signal);
    }
  }
}
