import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import {
  guardRequests,
  limitServer,
  requestUrl,
  serveWatched,
  type DelegatedAuth,
  type Logger,
  type ServingPair,
} from '@sandbox-scale/kube-runtime';
import { SandboxScaleError } from '@sandbox-scale/scale-core';
import { asSandboxdHttpError } from '@sandbox-scale/sandboxd-client';
import type { Registry } from 'prom-client';
import { DEFAULT_RELAY_BOUNDS } from '../data-plane/relay-bounds';
import { openGuestPort, type SandboxResolver } from './guest-port';
import { relayRequest, relayUpgrade } from './relay';
import {
  callerName,
  KubernetesRouterAuth,
  OpenRouterAuth,
  type RouterAuth,
  type RouterAuthentication,
  type RouterCaller,
} from './router-auth';
import { asRouterError, RouterError, routerErrorOf, sendRouterError, writeRouterErrorTo } from './router-errors';
import { routerMetrics, type RouterMetrics } from './router-metrics';
import { DEFAULT_PROXY_TIMEOUT_MS, parseRoutingHeaders, type RoutingTarget } from './routing-headers';

/** At most this long to reach a guest port (find the sandbox, read its token, open the node's relay), as upstream's connect bound. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
export const DEFAULT_MAX_RELAYS = 1_024;
/** Relays of one namespace at once, all its callers together: a quarter of the router's. */
export const DEFAULT_MAX_RELAYS_PER_NAMESPACE = 256;

/** Request line and headers of one request; past it Node answers 431 itself. */
export const DEFAULT_MAX_HEADER_BYTES = 16 * 1024;

export interface RouterConfig {
  /** '' listens on every interface. 0 picks a free port. */
  readonly host: string;
  readonly port: number;
  /** Serve HTTPS with this certificate (the server's serving certificate), and each it changes to; default plain HTTP, as upstream's router. */
  readonly tls?: ServingPair;
  readonly authentication: RouterAuthentication;
  /**
   * A second listener, plain HTTP and without authentication, for `kubectl port-forward`: the
   * container runtime dials localhost inside the pod, so a loopback address here is reached only
   * through that tunnel, whose own authorization (create pods/portforward) is the only check. It
   * shares the relay slots and the metrics of the first. Absent = off.
   */
  readonly tunnel?: { readonly host: string; readonly port: number };
  /** The server's one authenticator and authorizer; required under `kubernetes`. */
  readonly delegatedAuth?: Pick<DelegatedAuth, 'authenticateToken' | 'authorize'>;
  readonly access: SandboxResolver;
  /** False while the served sandboxes are not known yet (their cache is not synced): every relay is a 503 then. */
  readonly ready: () => boolean;
  /** The longest a relay may wait for the guest's answer, and the default of X-Sandbox-Timeout. Default 180 s. */
  readonly proxyTimeoutMs?: number;
  readonly connectTimeoutMs?: number;
  /** Requests relayed at once (open upgrades included); one more is a 503. */
  readonly maxRelays?: number;
  /** Requests relayed at once for one namespace's sandboxes, all callers together; one more is a 429. */
  readonly maxRelaysPerNamespace?: number;
  /** An upgraded relay idle (no byte either way) this long is closed. */
  readonly relayIdleTimeoutMs?: number;
  /** An upgraded relay is closed after this long. */
  readonly relayMaxDurationMs?: number;
  readonly maxHeaderBytes?: number;
  readonly maxConnections?: number;
  readonly log: Logger;
  readonly registry: Registry;
}

export interface RunningRouter {
  readonly url: string;
  readonly port: number;
  /** The tunnel listener's base URL, when it runs. */
  readonly tunnelUrl?: string;
  stop(): Promise<void>;
}

/** The router was asked for Kubernetes authentication without anything to authenticate with. */
export class RouterConfigError extends SandboxScaleError {}

/**
 * The relays under way, bounded in all and per namespace: the slot is held until the caller's
 * connection is done with the request. Slots go to callers already authenticated and authorized,
 * so sockets that never say who they are hold none, and one namespace (however many
 * ServiceAccounts it mints) leaves the rest to every other.
 */
class RelaySlots {
  #used = 0;
  readonly #usedIn = new Map<string, number>();
  constructor(
    private readonly max: number,
    private readonly maxPerNamespace: number,
    private readonly metrics: RouterMetrics,
  ) {}

  /** A release function; a RouterError when every slot, or every slot of the namespace, is taken. */
  acquire(namespace: string): () => void {
    if (this.#used >= this.max) throw new RouterError(503, 'Too many requests in flight, retry later.', { retryAfterSeconds: 1 });
    const inNamespace = this.#usedIn.get(namespace) ?? 0;
    if (inNamespace >= this.maxPerNamespace)
      throw new RouterError(429, `Too many requests in flight for namespace ${namespace}, retry later.`, { retryAfterSeconds: 1 });
    this.#used += 1;
    this.#usedIn.set(namespace, inNamespace + 1);
    this.metrics.relayStarted();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#used -= 1;
      const left = (this.#usedIn.get(namespace) ?? 1) - 1;
      if (left <= 0) this.#usedIn.delete(namespace);
      else this.#usedIn.set(namespace, left);
      this.metrics.relayEnded();
    };
  }
}

function authOf(c: RouterConfig): RouterAuth {
  if (c.authentication === 'none') return new OpenRouterAuth();
  if (c.delegatedAuth === undefined)
    throw new RouterConfigError('--router-authentication=kubernetes needs delegated authentication, which this server runs without');
  return new KubernetesRouterAuth(c.delegatedAuth);
}

/**
 * What a log line says of a refusal: a node's refusal by its status and operation only, since its
 * message is the node's own text and the request that met it carried the sandbox's token.
 */
function loggedCause(err: unknown): unknown {
  const node = asSandboxdHttpError(err);
  if (node !== undefined) return { name: node.name, operation: node.operation, statusCode: node.statusCode };
  const cause = asRouterError(err)?.cause;
  return cause === undefined ? err : cause;
}

/** One listener of the router: who it lets in, and the logger its lines go to. */
interface Listener {
  readonly auth: RouterAuth;
  readonly log: Logger;
}

interface Listening {
  readonly server: Server;
  readonly url: string;
  readonly port: number;
}

/** The base URL of a listener: a wildcard address as 127.0.0.1, an IPv6 one in brackets. */
function urlOf(tls: boolean, host: string, port: number): string {
  const shown = host === '' || host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  return `${tls ? 'https' : 'http'}://${shown}:${port}`;
}

interface Routed {
  readonly target: RoutingTarget;
  readonly caller: RouterCaller;
  readonly guest: Socket;
  readonly deadline: AbortSignal;
}

/**
 * The sandbox router: agent-sandbox's `sandbox-router` for microVMs. `GET /healthz` answers
 * without authentication; every other request (any method, any path, WebSocket upgrades too) is
 * routed by its X-Sandbox-* headers to a served Sandbox's guest port, reached through its node's
 * `ports` relay with the sandbox's own token, which never leaves this process. With `tunnel`, a
 * second listener serves the same, without authentication, for `kubectl port-forward`.
 */
export async function startRouter(c: RouterConfig): Promise<RunningRouter> {
  const main: Listener = { auth: authOf(c), log: c.log.child({ listener: 'router' }) };
  const tunnel: Listener = { auth: new OpenRouterAuth(), log: c.log.child({ listener: 'router-tunnel' }) };
  const metrics = routerMetrics(c.registry);
  const slots = new RelaySlots(c.maxRelays ?? DEFAULT_MAX_RELAYS, c.maxRelaysPerNamespace ?? DEFAULT_MAX_RELAYS_PER_NAMESPACE, metrics);
  const upgradeBounds = {
    idleTimeoutMs: c.relayIdleTimeoutMs ?? DEFAULT_RELAY_BOUNDS.idleTimeoutMs,
    maxDurationMs: c.relayMaxDurationMs ?? DEFAULT_RELAY_BOUNDS.maxDurationMs,
  };
  const proxyTimeoutMs = c.proxyTimeoutMs ?? DEFAULT_PROXY_TIMEOUT_MS;
  const connectTimeoutMs = Math.min(c.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS, proxyTimeoutMs);
  const upgraded = new Set<Duplex>();

  /**
   * Everything before the relay: headers, caller, permission, a relay slot of the sandbox's
   * namespace (taken only once the caller is known and allowed), the guest port opened. The slot
   * goes to `hold`, which gives it back when the caller's connection is done.
   */
  const reach = async (l: Listener, req: IncomingMessage, gone: AbortSignal, hold: (release: () => void) => void): Promise<Routed> => {
    const target = parseRoutingHeaders(req.headersDistinct, proxyTimeoutMs);
    const deadline = AbortSignal.any([AbortSignal.timeout(target.timeoutMs), gone]);
    const caller = await l.auth.authenticate(req.headersDistinct, deadline);
    await l.auth.authorize(caller, target, deadline);
    if (gone.aborted) throw gone.reason;
    hold(slots.acquire(target.namespace));
    if (!c.ready())
      throw new RouterError(503, 'The sandbox router is starting: the served sandboxes are not known yet.', { retryAfterSeconds: 1 });
    const guest = await openGuestPort(c.access, target, AbortSignal.any([deadline, AbortSignal.timeout(connectTimeoutMs)]));
    return { target, caller, guest, deadline };
  };

  /** Where a request keeps its slot: given back once, when its connection is done, whenever it was taken. */
  const slotHolder = (): { hold: (release: () => void) => void; release: () => void } => {
    let held: (() => void) | undefined;
    let done = false;
    return {
      hold: (release) => {
        if (done) release();
        else held = release;
      },
      release: () => {
        done = true;
        held?.();
        held = undefined;
      },
    };
  };

  const refused = (l: Listener, req: IncomingMessage, err: unknown, code: number): void => {
    const fields = { method: req.method, path: req.url, code, err: loggedCause(err) };
    if (code >= 500) l.log.warn(fields, 'router request failed');
    else l.log.debug(fields, 'router request refused');
  };

  const serve = async (l: Listener, req: IncomingMessage, res: ServerResponse): Promise<void> => {
    res.once('finish', () => metrics.answered(res.statusCode));
    const url = requestUrl(req.url, 'http://localhost');
    if (url?.pathname === '/healthz' && (req.method === 'GET' || req.method === 'HEAD')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"status":"ok"}');
      return;
    }
    const slot = slotHolder();
    const gone = new AbortController();
    res.once('close', () => {
      slot.release();
      if (!res.writableFinished) gone.abort(new RouterError(499, 'the caller went away'));
    });
    try {
      const started = Date.now();
      const r = await reach(l, req, gone.signal, slot.hold);
      await relayRequest(req, res, r.guest, {
        port: r.target.port,
        name: r.target.name,
        deadline: r.deadline,
        idleTimeoutMs: r.target.timeoutMs,
      });
      l.log.debug(
        {
          namespace: r.target.namespace,
          name: r.target.name,
          port: r.target.port,
          user: callerName(r.caller),
          code: res.statusCode,
          durationMs: Date.now() - started,
        },
        'relayed',
      );
    } catch (err) {
      const e = routerErrorOf(err);
      if (res.destroyed) return;
      // a body not read yet is not worth reading to keep the connection: it closes after the answer
      if (!req.complete) res.shouldKeepAlive = false;
      sendRouterError(res, e);
      refused(l, req, err, e.status);
    }
  };

  const serveUpgrade = async (l: Listener, req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> => {
    upgraded.add(socket);
    socket.on('error', () => socket.destroy());
    const slot = slotHolder();
    const gone = new AbortController();
    socket.once('close', () => {
      upgraded.delete(socket);
      slot.release();
      gone.abort(new RouterError(499, 'the caller went away'));
    });
    try {
      const r = await reach(l, req, gone.signal, slot.hold);
      metrics.answered(101);
      l.log.debug(
        { namespace: r.target.namespace, name: r.target.name, port: r.target.port, user: callerName(r.caller) },
        'upgrade relayed',
      );
      await relayUpgrade(req, socket, head, r.guest, {
        port: r.target.port,
        name: r.target.name,
        deadline: r.deadline,
        idleTimeoutMs: r.target.timeoutMs,
        upgraded: upgradeBounds,
      });
    } catch (err) {
      const e = routerErrorOf(err);
      metrics.answered(e.status);
      writeRouterErrorTo(socket, e);
      refused(l, req, err, e.status);
    }
  };

  const maxHeaderSize = c.maxHeaderBytes ?? DEFAULT_MAX_HEADER_BYTES;
  const listen = async (l: Listener, host: string, port: number, tls: RouterConfig['tls']): Promise<Listening> => {
    const onRequest = guardRequests((req, res) => serve(l, req, res), {
      log: l.log,
      fail: (res, err) => sendRouterError(res, routerErrorOf(err)),
    });
    let server: Server;
    if (tls) {
      const httpsServer = createHttpsServer({ ...tls.current, maxHeaderSize }, onRequest);
      serveWatched(httpsServer, tls);
      server = httpsServer;
    } else server = createHttpServer({ maxHeaderSize }, onRequest);
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      serveUpgrade(l, req, socket, head).catch((err: unknown) => {
        l.log.error({ err }, 'router upgrade failed unexpectedly');
        socket.destroy();
      });
    });
    limitServer(server, {
      headersTimeoutMs: 30_000,
      // a body is streamed to the guest while it arrives: it may take as long as the guest may
      requestTimeoutMs: proxyTimeoutMs + connectTimeoutMs,
      keepAliveTimeoutMs: 60_000,
      ...(c.maxConnections !== undefined ? { maxConnections: c.maxConnections } : {}),
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host === '' ? undefined : host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const bound = (server.address() as AddressInfo).port;
    return { server, port: bound, url: urlOf(tls !== undefined, host, bound) };
  };
  const close = async (l: Listening): Promise<void> => {
    l.server.closeAllConnections();
    await new Promise<void>((resolve) => l.server.close(() => resolve()));
  };

  const served = await listen(main, c.host, c.port, c.tls);
  const { url, port } = served;
  main.log.info({ url, authentication: c.authentication, tls: c.tls !== undefined }, 'router listening');
  if (c.authentication === 'none')
    main.log.warn(
      { url },
      'the sandbox router runs without authentication (--router-authentication=none): whoever reaches its port reaches the guest ports of every served sandbox',
    );
  let tunneled: Listening | undefined;
  if (c.tunnel !== undefined) {
    try {
      // plain HTTP always: the tunnel's local end is http://127.0.0.1 on the caller's machine
      tunneled = await listen(tunnel, c.tunnel.host, c.tunnel.port, undefined);
    } catch (err) {
      await close(served);
      throw err;
    }
    tunnel.log.info({ url: tunneled.url, authentication: 'none', tls: false }, 'router tunnel listening');
    tunnel.log.warn(
      { url: tunneled.url },
      'the sandbox router tunnel listener runs without authentication (--router-tunnel-bind-address): who may port-forward to this pod reaches the guest ports of every served sandbox through it',
    );
  }
  return {
    url,
    port,
    ...(tunneled !== undefined ? { tunnelUrl: tunneled.url } : {}),
    async stop() {
      for (const s of upgraded) s.destroy();
      await Promise.all([close(served), ...(tunneled !== undefined ? [close(tunneled)] : [])]);
    },
  };
}
