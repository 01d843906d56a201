import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { guardRequests, limitServer, readBounded, requestUrl, type Logger } from '@sandbox-scale/kube-runtime';
import { issuesText } from '@sandbox-scale/scale-core';
import { isApiError, parseBodyJson } from './api-error';
import { bearerOf, safeEqual } from './auth';
import { sleep } from './clock';
import { FAILURE_TEXT, FaultsSchema, type FaultState, type MalformedMode } from './faults';
import { BODY_LIMIT_BYTES, errorReply, jsonReply, writeReply, type Reply } from './http-io';
import type { NodeState } from './node-state';
import { nodeRoutes } from './node-routes';
import { matchRoute, RouteCtx, type Route } from './route';
import { sandboxRoutes } from './sandbox-routes';
import { dataPlaneRoutes } from './data-plane/routes';
import { handleUpgrade, watchPartitions } from './data-plane/upgrade';

const ROUTES: readonly Route[] = [...sandboxRoutes, ...dataPlaneRoutes, ...nodeRoutes];

/** A reply shape that matches no schema of the API (every field of the wrong type). */
const WRONG_SHAPE = {
  id: 42,
  token: 42,
  deadline: 42,
  pools: 42,
  claimed: 'x',
  sandboxes: 42,
  checkpoints: 42,
  checkpoint: 42,
  children: 42,
  key: 42,
  peers: 42,
  owner_addr: 42,
};

function malformedReply(mode: MalformedMode): Reply {
  if (mode === 'invalid-json') return { status: 200, text: '{"id": "sb_', contentType: 'application/json' };
  if (mode === 'wrong-shape') return jsonReply(WRONG_SHAPE);
  return { status: 200, text: JSON.stringify({ pad: 'x'.repeat(BODY_LIMIT_BYTES + 1024) }), contentType: 'application/json' };
}

export interface NodeServerDeps {
  node: NodeState;
  faults: FaultState;
  logger: Logger;
}

/**
 * The node's HTTP server: faults first (partition, latency, 503, 500), then the route,
 * then a malformed reply if asked for. `/_sim/faults` is the simulator's own admin
 * endpoint and is never faulted, so a partitioned node can be healed.
 */
export function createNodeServer(deps: NodeServerDeps): Server {
  const server = createServer(
    guardRequests((req, res) => handle(deps, req, res), {
      log: deps.logger.child({ node: deps.node.name }),
      fail: (res) => writeReply(res, errorReply(500, 'internal error')),
    }),
  );
  // The request deadline bounds receiving the request only, so a cold claim that blocks while
  // the VM boots is not cut; idle sockets are kept past the client's 90 s.
  limitServer(server, { keepAliveTimeoutMs: 120_000, headersTimeoutMs: 30_000, requestTimeoutMs: 60_000 });
  // The agent and port relays are upgrades: answered on the raw socket, then relayed.
  server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => handleUpgrade(deps, server, req, socket, head));
  watchPartitions(deps);
  return server;
}

async function handle(deps: NodeServerDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = requestUrl(req.url, 'http://sim');
  if (url === undefined) return writeReply(res, errorReply(400, 'malformed request target'));
  const bearer = bearerOf(req.headers.authorization);
  if (url.pathname === '/_sim/faults') return writeReply(res, await admin(deps, req, bearer));
  const faults = deps.faults.current;
  if (faults.partition === 'close') {
    req.socket.destroy();
    return;
  }
  if (faults.partition === 'hang') return; // the request is accepted and never answered
  const match = matchRoute(ROUTES, req.method ?? 'GET', url.pathname);
  if ('status' in match) {
    return writeReply(
      res,
      match.status === 404 ? { status: 404, text: '404 page not found\n' } : { status: 405, text: 'Method Not Allowed\n' },
    );
  }
  deps.node.metrics.countRequest(match.route.method, match.route.path);
  const raw = await readBounded(req, BODY_LIMIT_BYTES);
  if (raw === undefined) {
    res.shouldKeepAlive = false;
    return writeReply(res, { ...errorReply(400, 'invalid request body'), headers: { connection: 'close' } });
  }
  const ctx = new RouteCtx(deps.node, match.id, url.searchParams, bearer, raw);
  const hangUp = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) hangUp.abort();
  });
  ctx.signal = hangUp.signal;
  const reply = await serve(deps, match.route, ctx);
  if (!hangUp.signal.aborted) writeReply(res, reply);
}

async function serve(deps: NodeServerDeps, route: Route, ctx: RouteCtx): Promise<Reply> {
  const faults = deps.faults.current;
  const verb = route.verb;
  if (verb !== undefined) {
    const delayMs = faults.latencyMs + (faults.slow[verb] ?? 0);
    if (delayMs > 0) await sleep(deps.node.clock, delayMs);
    const retryAfter = faults.unavailable[verb];
    if (retryAfter !== undefined) return errorReply(503, 'temporarily unavailable', { 'retry-after': String(retryAfter) });
    if (deps.faults.shouldFail(verb)) return errorReply(500, FAILURE_TEXT[verb]);
  }
  let reply: Reply;
  try {
    reply = await route.handle(ctx);
  } catch (err) {
    if (!isApiError(err)) throw err;
    reply = errorReply(err.status, err.message, err.headers);
  }
  const mode = verb === undefined ? undefined : faults.malformed[verb];
  return mode !== undefined && reply.status < 300 ? malformedReply(mode) : reply;
}

async function admin(deps: NodeServerDeps, req: IncomingMessage, bearer: string | undefined): Promise<Reply> {
  const root = deps.node.rootToken;
  if (root !== '' && (bearer === undefined || !safeEqual(bearer, root))) return errorReply(401, 'invalid api token');
  if (req.method === 'GET') return jsonReply(deps.faults.current);
  if (req.method === 'DELETE') {
    deps.faults.clear();
    return jsonReply(deps.faults.current);
  }
  if (req.method !== 'POST' && req.method !== 'PUT') return { status: 405, text: 'Method Not Allowed\n' };
  const raw = (await readBounded(req, BODY_LIMIT_BYTES)) ?? Buffer.alloc(0);
  let input: unknown;
  try {
    input = parseBodyJson(raw.toString('utf8') || '{}');
  } catch (err) {
    return errorReply(400, isApiError(err) ? err.message : 'invalid request body');
  }
  const parsed = FaultsSchema.safeParse(input);
  if (!parsed.success) return errorReply(400, `invalid faults: ${issuesText(parsed.error, '; ')}`);
  try {
    const faults = deps.faults.set(parsed.data);
    deps.logger.info({ node: deps.node.name }, 'faults replaced');
    return jsonReply(faults);
  } catch (err) {
    if (isApiError(err)) return errorReply(400, `invalid faults: ${err.message}`);
    throw err;
  }
}
