import { createHash } from 'node:crypto';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import {
  E2bApiError,
  errorBody,
  isE2bApiError,
  MAX_RPC_MESSAGE_BYTES,
  ProcessTable,
  serveControlPlane,
  serveEnvd,
  type EnvdReply,
  type ServedIdentity,
} from '@sandbox-scale/e2b-protocol';
import {
  closeServer,
  guardRequests,
  InflightLimits,
  limitServer,
  readBounded,
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
import { CallerBackend, CallerEnvd, E2B_MAX_FILE_BYTES, statsOf } from './e2b-backend';
import { apiKeyOf, e2bNamespaceOf, oneHeader } from './e2b-identity';

/**
 * The e2b listener: e2b's control-plane REST API and envd on one address, so e2b's SDKs work
 * unmodified with E2B_API_URL and E2B_SANDBOX_URL both set to it. The API key is a Kubernetes
 * bearer token: TokenReview (through the server's one DelegatedAuth, cached) says who calls and
 * so which namespace holds its sandboxes; every verb is then made against the Kubernetes API with
 * that same token, so RBAC and sandbox-apiserver's own checks decide it as for kubectl.
 */

/** The envd version reported: no implicit user (≥ 0.4.0), stdin:false (≥ 0.3.0), multipart uploads (< 0.5.7). */
export const E2B_ENVD_VERSION = '0.5.4';

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
  /** Commands running per sandbox (namespace/name), so SendSignal finds a Start's pid; a table goes when its last command does. */
  const tables = new Map<string, ProcessTable>();

  const callerOf = async (req: IncomingMessage, kind: 'control-plane' | 'envd', signal: AbortSignal): Promise<Caller> => {
    const key = apiKeyOf(req.headers, kind);
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
    const identity: ServedIdentity = { envdVersion: E2B_ENVD_VERSION, envdAccessToken: caller.key, clientID: caller.namespace };
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

  const writeEnvd = async (res: ServerResponse, reply: EnvdReply): Promise<void> => {
    if (!('stream' in reply)) {
      res.writeHead(reply.status, { 'content-type': reply.contentType, 'content-length': reply.body.length });
      res.end(reply.body);
      return;
    }
    res.writeHead(200, { 'content-type': reply.contentType });
    const it = reply.stream[Symbol.asyncIterator]();
    // the caller hanging up ends the stream, and so aborts its command (the generator's finally)
    const gone = (): void => void it.return?.(undefined);
    res.once('close', gone);
    try {
      for (;;) {
        const next = await it.next();
        if (next.done === true || res.destroyed) break;
        if (!res.write(next.value)) await new Promise<void>((resolve) => res.once('drain', resolve).once('close', resolve));
      }
    } finally {
      res.off('close', gone);
      res.end();
    }
  };

  const serveEnvdCall = async (req: IncomingMessage, res: ServerResponse, url: URL, caller: Caller): Promise<void> => {
    const id = oneHeader(req.headers, 'e2b-sandbox-id');
    if (id === undefined) return sendE2b(res, 400, errorBody(400, 'E2b-Sandbox-Id names no sandbox'));
    const envd = new CallerEnvd(caller.client, caller.namespace, id, (err) =>
      log.warn({ err, namespace: caller.namespace, sandbox: id, path: url.pathname }, 'e2b envd call failed'),
    );
    if (url.pathname === '/health') {
      // what isRunning asks: the sandbox's node has it, running (a paused guest's envd would not answer)
      const stats = await statsOf(caller.client, caller.namespace, id);
      if (stats !== 'gone' && stats !== undefined && stats.paused !== true) return sendE2b(res, 204, undefined);
      return sendE2b(res, 502, errorBody(502, `sandbox "${id}" was not found running`));
    }
    const limit = url.pathname === '/files' ? E2B_MAX_FILE_BYTES + 64 * 1024 : MAX_RPC_MESSAGE_BYTES + 16;
    const body = await readBounded(req, limit);
    if (body === undefined) return sendE2b(res, 413, errorBody(413, `request body larger than ${limit} bytes`));
    const tableKey = `${caller.namespace}/${id}`;
    let table = tables.get(tableKey);
    if (table === undefined) tables.set(tableKey, (table = new ProcessTable()));
    const timeout = Number(oneHeader(req.headers, 'connect-timeout-ms'));
    try {
      const reply = await serveEnvd(envd, table, {
        method: req.method ?? 'GET',
        path: url.pathname,
        query: url.searchParams,
        contentType: req.headers['content-type'],
        timeoutMs: Number.isFinite(timeout) && timeout > 0 ? timeout : undefined,
        body,
      });
      await writeEnvd(res, reply);
    } finally {
      if (table.size === 0) tables.delete(tableKey);
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
      const caller = await callerOf(req, kind, gone.signal);
      held.push(limits.acquire(caller.user.username, false));
      if (kind === 'envd') {
        held.push(limits.acquireStream(caller.namespace));
        await serveEnvdCall(req, res, url, caller);
      } else await serveControl(req, res, url, caller);
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
