import { createHash } from 'node:crypto';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { E2bApiError, ENVD_PORT, errorBody, isE2bApiError, serveControlPlane, type ServedIdentity } from '@sandbox-scale/e2b-protocol';
import {
  closeServer,
  guardRequests,
  InflightLimits,
  limitServer,
  readRequestBody,
  requestUrl,
  serveWatched,
  TtlLru,
  type DelegatedAuth,
  type Logger,
  type ServingPair,
  type UserInfo,
} from '@sandbox-scale/kube-runtime';
import { SandboxScaleError, statusErrorOf } from '@sandbox-scale/scale-core';
import { SandboxClient } from '@sandbox-scale/sdk';
import type { SandboxResolver } from '../data-plane/reach';
import { openGuestPort } from '../router/guest-port';
import { relayRequest } from '../router/relay';
import { asRouterError } from '../router/router-errors';
import { CallerBackend } from './e2b-backend';
import { apiKeyOf, e2bNamespaceOf, oneHeader, sandboxIdOfHost } from './e2b-identity';
import type { EnvdTokens } from './envd-token';

/**
 * The e2b listener: e2b's control-plane REST API and envd on one address, so e2b's SDKs work
 * unmodified with E2B_API_URL and E2B_SANDBOX_URL both set to it. The API key is a Kubernetes
 * bearer token: TokenReview (through the server's one DelegatedAuth, cached) says who calls and
 * so which namespace holds its sandboxes; every control-plane verb is then made against the
 * Kubernetes API with that same token, so RBAC and sandbox-apiserver's own checks decide it as
 * for kubectl. envd's calls carry the sandbox's access token, handed out with each create and
 * connect, and are relayed to envd in the guest (port 49983) through the node's port relay, as
 * the router relays to 8888.
 */

/**
 * The envd version reported, the gates e2b's SDKs read from it: stdin:false (0.3.0), no
 * implicit user (0.4.0), CloseStdin (0.5.2), octet-stream uploads (0.5.7); not file metadata (0.6.2).
 */
export const E2B_ENVD_VERSION = '0.5.7';
/** How long a guest may take to answer, and then to go quiet (a stream's keepalive comes every 50 s). */
const ENVD_CONNECT_TIMEOUT_MS = 30_000;
const ENVD_IDLE_TIMEOUT_MS = 120_000;
/** Credentials of this hop, never the guest's to see. */
const ENVD_DROPPED_HEADERS: ReadonlySet<string> = new Set(['x-access-token', 'x-api-key', 'e2b-sandbox-id']);

export const DEFAULT_E2B_CAPS = {
  /** Requests of one identity at once. */
  maxRequestsPerUser: 64,
  /** envd calls (commands, file transfers) at once, all namespaces together and per namespace. */
  maxStreams: 256,
  maxStreamsPerNamespace: 32,
};

/** The largest control-plane body (a create's metadata is the biggest part). */
const MAX_CONTROL_PLANE_BODY_BYTES = 256 * 1024;
/** Callers' clients kept, by token hash, and for how long: the Python SDK sends one request per call. */
const CLIENTS_MAX = 10_000;
const CLIENT_TTL_MS = 5 * 60_000;

/** What e2b's SDKs call on envd; envd's own (/init, /envs, /metrics, freezing) are the orchestrator's, never relayed. */
const ENVD_PATHS = /^\/(?:files|health|process\.Process\/[A-Za-z]+|filesystem\.Filesystem\/[A-Za-z]+)$/;

/** The e2b listener was asked for without the Kubernetes authentication its API keys need. */
export class E2bConfigError extends SandboxScaleError {}

export interface E2bServerConfig {
  /** '' listens on every interface; 0 picks a free port. */
  readonly host: string;
  readonly port: number;
  /** HTTPS with the server's serving certificate (and each it changes to); absent: plain HTTP. */
  readonly tls?: ServingPair;
  /** The kube-apiserver callers' calls go to (its cluster entry; never its credentials). */
  readonly kubeConfig: KubeConfig;
  readonly auth: Pick<DelegatedAuth, 'authenticateToken'>;
  /** Where a served sandbox's node is, and the token to reach it there (the router's own). */
  readonly access: SandboxResolver;
  /** Each sandbox's envd access token. */
  readonly tokens: EnvdTokens;
  /** A served sandbox's phase as this replica's cache has it; undefined: not served. */
  readonly pausedOf: (namespace: string, name: string) => boolean | undefined;
  /** The namespace of sandboxes of a caller that is not a ServiceAccount; absent: such callers are refused. */
  readonly defaultNamespace?: string;
  readonly caps?: typeof DEFAULT_E2B_CAPS;
  readonly maxConnections?: number;
  readonly log: Logger;
}

export interface RunningE2bServer {
  readonly url: string;
  readonly port: number;
  stop(): Promise<void>;
}

interface Caller {
  readonly user: UserInfo;
  readonly namespace: string;
  readonly client: SandboxClient;
  readonly key: string;
}

/** A KubeConfig of the server's cluster entry and the caller's token: nothing of the server's own identity. */
function callerKubeConfig(server: KubeConfig, token: string, namespace: string): KubeConfig {
  const cluster = server.getCurrentCluster();
  if (cluster === null) throw new Error('the server kubeconfig has no current cluster');
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name: 'e2b-caller', token }],
    contexts: [{ name: 'e2b', cluster: cluster.name, user: 'e2b-caller', namespace }],
    currentContext: 'e2b',
  });
  return kc;
}

/** The Idempotency-Key a create may carry (Python sends it when its caller gives one), bounded. */
function idempotencyKeyOf(req: IncomingMessage): { idempotencyKey?: string } {
  const key = oneHeader(req.headers, 'idempotency-key');
  if (key === undefined) return {};
  if (key.length > 256) throw new E2bApiError(400, 'Idempotency-Key is longer than 256 characters');
  return { idempotencyKey: key };
}

function sendE2b(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (status === 204 || body === undefined) {
    res.writeHead(status, headers);
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** A refusal before any route ran (auth, limits, body), as the control plane's and envd's REST errors are shaped. */
function refusalOf(err: unknown): { status: number; message: string; retryAfter?: number } | undefined {
  if (isE2bApiError(err))
    return { status: err.status, message: err.message, ...(err.retryAfterSeconds ? { retryAfter: err.retryAfterSeconds } : {}) };
  const s = statusErrorOf(err);
  if (s === undefined) return undefined;
  return {
    status: s.code,
    message: s.message,
    ...(s.details.retryAfterSeconds !== undefined ? { retryAfter: s.details.retryAfterSeconds } : {}),
  };
}

export async function startE2bServer(c: E2bServerConfig): Promise<RunningE2bServer> {
  const log = c.log.child({ listener: 'e2b' });
  const caps = c.caps ?? DEFAULT_E2B_CAPS;
  const limits = new InflightLimits({
    maxWatches: 1,
    maxWatchesPerUser: 1,
    maxWatchesPerNamespace: 1,
    maxRequestsPerUser: caps.maxRequestsPerUser,
    maxStreams: caps.maxStreams,
    maxStreamsPerNamespace: caps.maxStreamsPerNamespace,
  });
  const clients = new TtlLru<string, SandboxClient>(CLIENTS_MAX, CLIENT_TTL_MS);

  const callerOf = async (req: IncomingMessage, signal: AbortSignal): Promise<Caller> => {
    const key = apiKeyOf(req.headers);
    const user = await c.auth.authenticateToken(key, signal).catch((err: unknown) => {
      throw statusErrorOf(err) ?? err;
    });
    if (user === undefined) throw new E2bApiError(401, 'the API key is not a token the Kubernetes API server accepts');
    const namespace = e2bNamespaceOf(user, c.defaultNamespace);
    const hash = createHash('sha256').update(key).update('\u0000').update(namespace).digest('hex');
    let client = clients.get(hash);
    if (client === undefined) {
      const kubeConfig = callerKubeConfig(c.kubeConfig, key, namespace);
      client = new SandboxClient({ kubeConfig, namespace });
      clients.set(hash, client);
    }
    return { user, namespace, client, key };
  };

  const serveControl = async (req: IncomingMessage, res: ServerResponse, url: URL, caller: Caller): Promise<void> => {
    const body = await readRequestBody(req, { maxBytes: MAX_CONTROL_PLANE_BODY_BYTES, optional: true });
    const identity: ServedIdentity = {
      envdVersion: E2B_ENVD_VERSION,
      envdAccessToken: (id) => c.tokens.issue(caller.namespace, id),
      clientID: caller.namespace,
    };
    const reply = await serveControlPlane(new CallerBackend(caller.client, caller.namespace), identity, {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.searchParams,
      body,
      ...idempotencyKeyOf(req),
    });
    if (reply.unexpected !== undefined)
      log.error({ err: reply.unexpected, method: req.method, path: url.pathname, namespace: caller.namespace }, 'e2b call failed');
    sendE2b(res, reply.status, reply.body, reply.headers);
  };

  /**
   * An envd call: the sandbox its E2b-Sandbox-Id (or Host) names, reached only with that
   * sandbox's access token, relayed to envd in the guest with the token and every e2b header
   * dropped. A paused sandbox is not running for envd (its node would wake it on a relay).
   */
  const serveEnvdCall = async (req: IncomingMessage, res: ServerResponse, gone: AbortSignal, held: (() => void)[]): Promise<void> => {
    const id = oneHeader(req.headers, 'e2b-sandbox-id') ?? sandboxIdOfHost(req.headers.host);
    if (id === undefined) return sendE2b(res, 400, errorBody(400, 'E2b-Sandbox-Id names no sandbox'));
    const namespace = c.tokens.namespaceOf(oneHeader(req.headers, 'x-access-token'), id);
    if (namespace === undefined)
      throw new E2bApiError(401, `X-Access-Token is not the envdAccessToken of sandbox "${id}" (the create or connect answer gives it)`);
    held.push(limits.acquireStream(namespace));
    const paused = c.pausedOf(namespace, id);
    if (paused !== false) throw new E2bApiError(502, `sandbox "${id}" ${paused === true ? 'is paused' : 'was not found'}`);
    const deadline = AbortSignal.any([AbortSignal.timeout(ENVD_CONNECT_TIMEOUT_MS), gone]);
    try {
      const guest = await openGuestPort(c.access, { namespace, name: id, port: ENVD_PORT, timeoutMs: ENVD_CONNECT_TIMEOUT_MS }, deadline);
      await relayRequest(req, res, guest, {
        port: ENVD_PORT,
        name: id,
        deadline,
        idleTimeoutMs: ENVD_IDLE_TIMEOUT_MS,
        droppedHeaders: ENVD_DROPPED_HEADERS,
      });
    } catch (err) {
      const refused = asRouterError(err);
      if (refused === undefined) throw err;
      // the SDKs read a gone sandbox from a 502 ("was not found"), as from e2b's own proxy
      if (refused.status === 404) throw new E2bApiError(502, `sandbox "${id}" was not found`);
      throw new E2bApiError(refused.status, refused.detail, refused.retryAfterSeconds);
    }
  };

  const serve = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = requestUrl(req.url, 'http://localhost');
    if (url === undefined) return sendE2b(res, 400, errorBody(400, 'the request path is not a URL path'));
    const kind = ENVD_PATHS.test(url.pathname) ? 'envd' : 'control-plane';
    const gone = new AbortController();
    res.once('close', () => gone.abort());
    const held: (() => void)[] = [];
    res.once('close', () => held.forEach((release) => release()));
    try {
      if (kind === 'envd') return await serveEnvdCall(req, res, gone.signal, held);
      const caller = await callerOf(req, gone.signal);
      held.push(limits.acquire(caller.user.username, false));
      await serveControl(req, res, url, caller);
    } catch (err) {
      const r = refusalOf(err);
      if (r === undefined) throw err;
      if (res.headersSent) return void res.destroy();
      if (!req.complete) res.shouldKeepAlive = false;
      sendE2b(res, r.status, errorBody(r.status, r.message), r.retryAfter !== undefined ? { 'retry-after': String(r.retryAfter) } : {});
      if (r.status >= 500) log.warn({ method: req.method, path: url.pathname, code: r.status, err }, 'e2b request failed');
    }
  };

  const onRequest = guardRequests(serve, { log, fail: (res) => sendE2b(res, 500, errorBody(500, 'internal error')) });
  let server: Server;
  if (c.tls !== undefined) {
    const https = createHttpsServer({ ...c.tls.current, maxHeaderSize: 16 * 1024 }, onRequest);
    serveWatched(https, c.tls);
    server = https;
  } else server = createHttpServer({ maxHeaderSize: 16 * 1024 }, onRequest);
  limitServer(server, {
    headersTimeoutMs: 30_000,
    // a command runs as long as the caller's Connect-Timeout-Ms asks, at most the exec cap
    requestTimeoutMs: 15 * 60_000,
    keepAliveTimeoutMs: 60_000,
    ...(c.maxConnections !== undefined ? { maxConnections: c.maxConnections } : {}),
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(c.port, c.host === '' ? undefined : c.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const shown = c.host === '' || c.host === '0.0.0.0' || c.host === '::' ? '127.0.0.1' : c.host.includes(':') ? `[${c.host}]` : c.host;
  const url = `${c.tls !== undefined ? 'https' : 'http'}://${shown}:${port}`;
  log.info({ url, tls: c.tls !== undefined }, 'e2b API listening');
  return { url, port, stop: () => closeServer(server) };
}
