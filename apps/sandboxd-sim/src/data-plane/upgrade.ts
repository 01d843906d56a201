import type { IncomingMessage, Server } from 'node:http';
import type { Socket } from 'node:net';
import { requestUrl } from '@sandbox-scale/kube-runtime';
import { AGENT_UPGRADE_PROTOCOL, PORT_UPGRADE_PROTOCOL } from '@sandbox-scale/sandboxd-client';
import { ApiError, isApiError } from '../api-error';
import { bearerOf } from '../auth';
import { sleep } from '../clock';
import { FAILURE_TEXT, type Verb } from '../faults';
import type { NodeServerDeps } from '../server';
import { accessSandbox, dataPlaneOf, type SandboxAccess } from './access';
import { serveAgent } from './agent-server';
import { relayPort } from './port-relay';
import { rawReply, switchProtocols } from './upgrade-reply';

const AGENT_PATH = /^\/v1\/sandboxes\/([^/]+)\/agent$/;
const PORT_PATH = /^\/v1\/sandboxes\/([^/]+)\/ports\/([^/]+)$/;

interface UpgradeTarget {
  verb: Extract<Verb, 'agent' | 'ports'>;
  protocol: string;
  id: string;
  port: string;
}

/** Every socket an upgrade took from the HTTP server, by server: the server no longer tracks them itself. */
const upgraded = new WeakMap<Server, Set<Socket>>();

/** Destroys what upgrades still hold open (the node stops: a relay must not keep it alive). */
export function destroyUpgrades(server: Server): void {
  for (const s of upgraded.get(server) ?? []) s.destroy();
  upgraded.delete(server);
}

function targetOf(pathname: string): UpgradeTarget | undefined {
  const agent = AGENT_PATH.exec(pathname);
  if (agent) return { verb: 'agent', protocol: AGENT_UPGRADE_PROTOCOL, id: decode(agent[1] ?? ''), port: '' };
  const port = PORT_PATH.exec(pathname);
  if (port) return { verb: 'ports', protocol: PORT_UPGRADE_PROTOCOL, id: decode(port[1] ?? ''), port: decode(port[2] ?? '') };
  return undefined;
}

function decode(seg: string): string {
  try {
    return decodeURIComponent(seg);
  } catch {
    return seg;
  }
}

/**
 * The node server's `upgrade` event: the agent and port relays. Faults apply as to every other
 * request (a partition drops or hangs it, latency delays it, 503 and 500 answer it), then the
 * sandbox is authenticated and woken, the 101 is written and the relay runs on the socket.
 */
export function handleUpgrade(deps: NodeServerDeps, server: Server, req: IncomingMessage, socket: Socket, head: Buffer): void {
  let set = upgraded.get(server);
  if (set === undefined) {
    set = new Set();
    upgraded.set(server, set);
  }
  set.add(socket);
  const tracked = set;
  socket.once('close', () => tracked.delete(socket));
  // a peer resetting the connection is that relay's end, never the node's
  socket.on('error', () => socket.destroy());
  serveUpgrade(deps, req, socket, head).catch((err: unknown) => {
    if (isApiError(err)) return rawReply(socket, err.status, err.message, err.headers);
    deps.logger.error({ err, node: deps.node.name, path: req.url }, 'upgrade failed unexpectedly');
    rawReply(socket, 500, 'internal error');
  });
}

async function serveUpgrade(deps: NodeServerDeps, req: IncomingMessage, socket: Socket, head: Buffer): Promise<void> {
  const url = requestUrl(req.url, 'http://sim');
  const target = url === undefined ? undefined : targetOf(url.pathname);
  if (target === undefined) throw new ApiError(404, 'no upgrade at this path');
  const faults = deps.faults.current;
  if (faults.partition === 'close') return void socket.destroy();
  if (faults.partition === 'hang') return; // accepted and never answered
  if (req.method !== 'GET') throw new ApiError(405, 'method not allowed');
  deps.node.metrics.countRequest('GET', target.verb === 'agent' ? '/v1/sandboxes/:id/agent' : '/v1/sandboxes/:id/ports/:port');
  await injected(deps, target.verb);
  dataPlaneOf(deps.node);
  if ((req.headers.upgrade ?? '').toLowerCase() !== target.protocol)
    throw new ApiError(426, `upgrade required: Upgrade: ${target.protocol}`, { upgrade: target.protocol });
  const access = await accessSandbox(deps.node, bearerOf(req.headers.authorization), target.id);
  if (socket.destroyed) return;
  if (target.verb === 'agent') return startAgent(access, socket, head);
  await relayPort(access, socket, head, parsePort(target.port));
}

async function injected(deps: NodeServerDeps, verb: Verb): Promise<void> {
  const faults = deps.faults.current;
  const delayMs = faults.latencyMs + (faults.slow[verb] ?? 0);
  if (delayMs > 0) await sleep(deps.node.clock, delayMs);
  const retryAfter = faults.unavailable[verb];
  if (retryAfter !== undefined) throw new ApiError(503, 'temporarily unavailable', { 'retry-after': String(retryAfter) });
  if (deps.faults.shouldFail(verb)) throw new ApiError(500, FAILURE_TEXT[verb]);
}

function parsePort(text: string): number {
  const port = /^[0-9]{1,5}$/.test(text) ? Number(text) : NaN;
  if (!(port >= 1 && port <= 65535)) throw new ApiError(400, `invalid port ${JSON.stringify(text)}: want 1-65535`);
  return port;
}

function startAgent(access: SandboxAccess, socket: Socket, head: Buffer): void {
  switchProtocols(socket, AGENT_UPGRADE_PROTOCOL);
  access.dp.attach(access.sb.id, socket);
  if (head.length > 0) socket.unshift(head);
  serveAgent(access, socket);
}

/**
 * Open relays follow the node's partition: `close` drops them, `hang` stops moving their bytes
 * until the partition heals.
 */
export function watchPartitions(deps: NodeServerDeps): void {
  deps.faults.onChange((faults) => {
    const dp = deps.node.dataPlane;
    if (dp === undefined) return;
    for (const s of [...dp.openSockets()]) {
      if (faults.partition === 'close') s.destroy();
      else if (faults.partition === 'hang') s.pause();
      else s.resume();
    }
  });
}
