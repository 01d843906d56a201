import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import * as http from 'node:http';
import * as https from 'node:https';
import type { Socket } from 'node:net';
import * as tls from 'node:tls';
import type { TLSSocket } from 'node:tls';
import {
  type ApiConstructor,
  type ApiType,
  type Configuration,
  createConfiguration,
  HttpMethod,
  KubeConfig,
  RequestContext,
  type SecurityAuthentication,
  ServerConfiguration,
} from '@kubernetes/client-node';

/**
 * One kept-alive transport per KubeConfig. client-node builds a new `https.Agent` for every
 * request it authenticates (typed APIs, raw requests and watches alike), so each API call paid
 * a TCP connect and a full TLS handshake. Here client-node still decides everything about
 * authentication — CA, client certificate, bearer token, exec plugin, token file — and only the
 * agent it built is swapped for a kept-alive one with the same TLS identity. A client
 * certificate rotated on disk (or returned anew by an exec plugin) is a new identity: it gets a
 * new agent, and the old one closes its sockets as they fall idle.
 *
 * Watches hold a connection for minutes; they get their own pool, so a burst of short calls
 * never queues behind them and they never hold the short calls' sockets.
 */

/** What a pool has done since it was made: requests sent, sockets opened, TLS handshakes (full or resumed). */
export interface TransportStats {
  readonly requests: number;
  readonly connections: number;
  /** secureConnect events: every TLS handshake, full or resumed. */
  readonly handshakes: number;
  /** Handshakes that resumed a cached TLS session (no certificate exchange). */
  readonly resumed: number;
}

export interface KubeTransportStats {
  readonly api: TransportStats;
  readonly watch: TransportStats;
}

/** Running counts, mutable: what countConnections adds to. */
export interface ConnectionCounters {
  requests: number;
  connections: number;
  handshakes: number;
  resumed: number;
}

const newCounters = (): ConnectionCounters => ({ requests: 0, connections: 0, handshakes: 0, resumed: 0 });

type AnyAgent = http.Agent | https.Agent;

// createConnection is on both agents at run time; the typings only declare it on some versions.
interface ConnectingAgent {
  createConnection: (...args: unknown[]) => Socket | undefined;
}

/** Counts the sockets `agent` opens and the TLS handshakes on them into `into`. */
export function countConnections(agent: AnyAgent, into: ConnectionCounters): void {
  const a = agent as unknown as ConnectingAgent;
  const create = a.createConnection.bind(agent);
  a.createConnection = (...args: unknown[]) => {
    const socket = create(...args);
    into.connections++;
    socket?.once('secureConnect', () => {
      into.handshakes++;
      if ((socket as TLSSocket).isSessionReused()) into.resumed++;
    });
    return socket;
  };
}

/** Sockets that carried a request on `agent` are closed as soon as they are free; idle ones now. */
function retire(agent: AnyAgent): void {
  agent.on('free', (socket: Socket) => socket.destroy());
  for (const sockets of Object.values(agent.freeSockets)) for (const s of sockets ?? []) s.destroy();
}

const API_AGENT: https.AgentOptions = {
  keepAlive: true,
  // most recently used first, so a quiet period lets the extra sockets of a burst time out
  scheduling: 'lifo',
  // A burst keeps its sockets for the next one: a socket freed beyond this is closed at once,
  // and the next burst pays a TLS handshake for it on both sides (with 64, a claim at
  // concurrency 50 cost half a handshake: its writes and the controller's run ~150 at once).
  // Idle ones still go after the timeout below.
  maxFreeSockets: 256,
  // an idle socket is closed after this; a busy one is never timed out by the agent
  // (below kube-apiserver's own idle timeout, so the client is the side that closes)
  timeout: 30_000,
};
const WATCH_AGENT: https.AgentOptions = { keepAlive: true, scheduling: 'lifo', maxFreeSockets: 16 };

/** What makes up an agent's TLS identity, in a fixed order. */
function identityParts(agent: http.Agent): unknown[] {
  const o = (agent as http.Agent & { options: https.AgentOptions }).options;
  return [
    agent.constructor === https.Agent ? 'https' : 'http',
    o.ca,
    o.cert,
    o.key,
    o.pfx,
    o.passphrase,
    o.servername,
    o.rejectUnauthorized === undefined ? undefined : String(o.rejectUnauthorized),
  ];
}

function samePart(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Buffer.isBuffer(a) && Buffer.isBuffer(b)) return a.equals(b);
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => samePart(v, b[i]));
  return false;
}

function digestOf(parts: readonly unknown[]): string {
  const h = createHash('sha256');
  for (const v of parts) {
    h.update('\0');
    for (const part of [v].flat())
      if (part !== undefined && part !== null)
        h.update(typeof part === 'string' ? part : Buffer.isBuffer(part) ? part : JSON.stringify(part));
  }
  return h.digest('base64url');
}

/**
 * The TLS identity of the agents client-node builds, one per request. The identity rarely
 * changes, so the last one is kept with its parts: a request whose parts equal them (client-node
 * decodes the same CA and key into new buffers each time) costs a byte compare, not a hash.
 */
class Identities {
  #last: { parts: unknown[]; id: string } | undefined;

  /** The identity `agent` stands for, or undefined when it is not a plain agent (a proxy). */
  of(agent: unknown): string | undefined {
    if (!(agent instanceof http.Agent) || (agent.constructor !== https.Agent && agent.constructor !== http.Agent)) return undefined;
    const parts = identityParts(agent);
    const last = this.#last;
    if (last !== undefined && last.parts.length === parts.length && last.parts.every((p, i) => samePart(p, parts[i]))) return last.id;
    const id = digestOf(parts);
    this.#last = { parts, id };
    return id;
  }
}

/**
 * The options of a kept-alive https agent for client-node's `built` options: the CA, client
 * certificate and key go into one SecureContext made here, not into the agent's options. With
 * them in the options, Node builds a new SecureContext (parsing the key and every CA) for each
 * connection, and turns the CA, certificate and key buffers into strings for the pool key of
 * each request (https.Agent#getName); with a secureContext it does neither.
 */
function sharedContextOptions(built: https.AgentOptions, pool: https.AgentOptions): https.AgentOptions {
  const { ca, cert, key, pfx, passphrase, ...rest } = built;
  const secureContext = tls.createSecureContext({
    ...(ca !== undefined ? { ca } : {}),
    ...(cert !== undefined ? { cert } : {}),
    ...(key !== undefined ? { key } : {}),
    ...(pfx !== undefined ? { pfx } : {}),
    ...(passphrase !== undefined ? { passphrase } : {}),
  });
  return { ...rest, ...pool, secureContext };
}

/** Kept-alive agents keyed by TLS identity; only the newest identity keeps its connections. */
class AgentPool {
  readonly #agents = new Map<string, AnyAgent>();
  readonly #identities = new Identities();
  readonly #opts: https.AgentOptions;
  readonly counters = newCounters();

  constructor(opts: https.AgentOptions) {
    this.#opts = opts;
  }

  /** The kept-alive agent for the identity `built` stands for; `built` itself when it cannot be shared. */
  agentFor(built: unknown): unknown {
    this.counters.requests++;
    const id = this.#identities.of(built);
    if (id === undefined) return built;
    const hit = this.#agents.get(id);
    if (hit) return hit;
    const b = built as AnyAgent & { options: https.AgentOptions };
    const agent =
      b instanceof https.Agent
        ? new https.Agent(sharedContextOptions(b.options, this.#opts))
        : new http.Agent({ ...b.options, ...this.#opts });
    countConnections(agent, this.counters);
    for (const old of this.#agents.values()) retire(old);
    this.#agents.clear();
    this.#agents.set(id, agent);
    return agent;
  }

  close(): void {
    for (const a of this.#agents.values()) a.destroy();
    this.#agents.clear();
  }
}

/**
 * A token file read when it changes, not once a minute as client-node's FileAuth does: kubelet
 * swaps a projected ServiceAccount token in place, and the next call should carry the new one.
 */
class TokenFile {
  #token: string | undefined;
  #version = '';

  constructor(readonly path: string) {}

  async read(): Promise<string> {
    const s = await stat(this.path);
    const version = `${s.ino}:${s.mtimeMs}:${s.size}`;
    if (this.#token === undefined || version !== this.#version) {
      this.#token = (await readFile(this.path, 'utf8')).trim();
      this.#version = version;
    }
    return this.#token;
  }
}

function tokenFileOf(kc: KubeConfig): string | undefined {
  const user = kc.getCurrentUser() as { authProvider?: { config?: Record<string, unknown> } } | null;
  const file = user?.authProvider?.config?.tokenFile;
  return typeof file === 'string' && file !== '' ? file : undefined;
}

/**
 * What client-node's authentication of a request depends on when it involves no exec plugin:
 * the current cluster and user objects, and the files they name (CA, client certificate and
 * key, read by client-node on every request). undefined: not reusable (an exec plugin, whose
 * credential client-node caches and renews itself).
 */
function staticAuthKey(kc: KubeConfig): { cluster: unknown; user: unknown; files: string } | undefined {
  // a KubeConfig subclass that authenticates in its own way is asked on every call, as client-node would
  if ((Object.getPrototypeOf(kc) as KubeConfig).applySecurityAuthentication !== KubeConfig.prototype.applySecurityAuthentication)
    return undefined;
  const cluster = kc.getCurrentCluster();
  const user = kc.getCurrentUser();
  if (user?.exec !== undefined) return undefined;
  const provider = (user as { authProvider?: { name?: string; config?: Record<string, unknown> } } | null)?.authProvider;
  // only the token file provider is known to depend on nothing but its file, read afresh per call (TokenFile)
  if (provider !== undefined && tokenFileOf(kc) === undefined) return undefined;
  let files = '';
  for (const path of [cluster?.caFile, user?.certFile, user?.keyFile]) {
    if (path === undefined || path === '') continue;
    try {
      const st = statSync(path);
      files += `${path}\0${st.ino}:${st.mtimeMs}:${st.size}\0`;
    } catch {
      return undefined; // let client-node report the missing file
    }
  }
  return { cluster, user, files };
}

/** One authentication outcome of client-node, kept while what it depends on is unchanged. */
interface StaticAuth {
  readonly key: { cluster: unknown; user: unknown; files: string };
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly agent: unknown;
}

export interface KubeTransport {
  /** Authenticates a request as client-node would, sending it over the kept-alive API pool. */
  readonly auth: SecurityAuthentication;
  /** client-node's authentication of `ctx` (headers only; the agent it sets is not used). */
  authenticate(ctx: RequestContext): Promise<void>;
  /** What client-node's Watch needs from a KubeConfig, with the watch pool's agent. */
  readonly watchConfig: KubeConfig;
  stats(): KubeTransportStats;
  close(): void;
}

const transports = new WeakMap<KubeConfig, KubeTransport>();

function makeTransport(kc: KubeConfig): KubeTransport {
  const api = new AgentPool(API_AGENT);
  const watch = new AgentPool(WATCH_AGENT);
  let tokenFile: TokenFile | undefined;
  const freshToken = async (): Promise<string | undefined> => {
    const path = tokenFileOf(kc);
    if (path === undefined) return undefined;
    if (tokenFile?.path !== path) tokenFile = new TokenFile(path);
    return tokenFile.read();
  };
  const authenticate = async (ctx: RequestContext): Promise<void> => {
    await kc.applySecurityAuthentication(ctx);
    const token = await freshToken();
    if (token !== undefined) ctx.setHeaderParam('Authorization', `Bearer ${token}`);
  };
  // client-node's outcome for credentials that do not change between calls: it builds an agent,
  // decodes (or reads) CA, certificate and key on every call, and the pool hashes them to find
  // the kept-alive agent; a tenth of a millisecond per API call, for the same answer each time
  let reused: StaticAuth | undefined;
  const auth: SecurityAuthentication = {
    getName: () => 'kept-alive',
    async applySecurityAuthentication(ctx: RequestContext): Promise<void> {
      const key = staticAuthKey(kc);
      const hit = reused;
      if (
        key !== undefined &&
        hit !== undefined &&
        hit.key.cluster === key.cluster &&
        hit.key.user === key.user &&
        hit.key.files === key.files
      ) {
        api.counters.requests++;
        for (const [name, value] of hit.headers) ctx.setHeaderParam(name, value);
        const token = await freshToken();
        if (token !== undefined) ctx.setHeaderParam('Authorization', `Bearer ${token}`);
        ctx.setAgent(hit.agent as http.Agent);
        return;
      }
      const before = { ...ctx.getHeaders() };
      await authenticate(ctx);
      const built = ctx.getAgent();
      const agent = api.agentFor(built);
      ctx.setAgent(agent as http.Agent);
      const headers = Object.entries(ctx.getHeaders()).filter(([name, value]) => before[name] !== value);
      // an agent the pool cannot share (a proxy's) is client-node's to build per call, as before
      reused = key === undefined || agent === built ? undefined : { key, headers, agent };
    },
  };
  // client-node's Watch reads only the current cluster and the fetch options from its config.
  const watchConfig = Object.create(kc) as KubeConfig;
  watchConfig.applyToFetchOptions = async (opts) => {
    const init = await kc.applyToFetchOptions(opts);
    init.agent = watch.agentFor(init.agent) as http.Agent;
    const token = await freshToken();
    // node-fetch's Headers, as client-node builds them
    const headers = init.headers as { set?: (name: string, value: string) => void } | undefined;
    if (token !== undefined) headers?.set?.('Authorization', `Bearer ${token}`);
    return init;
  };
  const snap = (c: ConnectionCounters): TransportStats => ({ ...c });
  return {
    auth,
    authenticate,
    watchConfig,
    stats: () => ({ api: snap(api.counters), watch: snap(watch.counters) }),
    close: () => {
      api.close();
      watch.close();
    },
  };
}

/** The kept-alive transport of `kc`, made on first use and shared by everything that uses `kc`. */
export function kubeTransport(kc: KubeConfig): KubeTransport {
  let t = transports.get(kc);
  if (!t) {
    t = makeTransport(kc);
    transports.set(kc, t);
  }
  return t;
}

/** A generated typed API (CoreV1Api, …) that sends over `kc`'s kept-alive transport; use instead of kc.makeApiClient. */
export function kubeApiClient<T extends ApiType>(kc: KubeConfig, api: ApiConstructor<T>): T {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster');
  const config: Configuration = createConfiguration({
    baseServer: new ServerConfiguration(cluster.server, {}),
    authMethods: { default: kubeTransport(kc).auth },
  });
  return new api(config);
}

/**
 * The Authorization header `kc` sends (for a bearer token: `Bearer …`), or '' without one.
 * For handing this process's own identity to a peer; never logged.
 */
export async function kubeAuthorization(kc: KubeConfig): Promise<string> {
  const ctx = new RequestContext('https://identity.invalid/', HttpMethod.GET);
  await kubeTransport(kc).authenticate(ctx);
  const headers = ctx.getHeaders();
  return headers.Authorization ?? headers.authorization ?? '';
}

/** Requests, sockets and TLS handshakes of `kc`'s transport so far. */
export function kubeTransportStats(kc: KubeConfig): KubeTransportStats {
  return kubeTransport(kc).stats();
}

/** Closes every connection of `kc`'s transport (at shutdown or the end of a test); a later call reconnects. */
export function closeKubeTransport(kc: KubeConfig): void {
  transports.get(kc)?.close();
}
