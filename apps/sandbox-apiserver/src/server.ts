import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  createLogger,
  DEFAULT_INFLIGHT_CAPS,
  DEFAULT_TOKEN_REVIEWS_IN_FLIGHT,
  DelegatedAuth,
  guardRequests,
  InflightLimits,
  limitServer,
  PeerClient,
  peerId,
  PeerIdentity,
  PeerSet,
  requestUrl,
  serveWatched,
  startPeerInformer,
  watchCaFile,
  type InflightCaps,
  type MemoryBudgetCaps,
  type Informer,
  type Logger,
} from '@sandbox-scale/kube-runtime';
import {
  BadRequestError,
  NODE_NOTICE_PATH,
  SANDBOX_LABELS,
  StatusError,
  type NodeInventory,
  type OwnerRefKey,
  type Rng,
} from '@sandbox-scale/scale-core';
import { fleetClients, type NodeTokenMode } from '@sandbox-scale/sandboxd-client';
import { Registry } from 'prom-client';
import { startAuthenticationConfigWatch, type ConfigMapRef } from './authn/auth-config';
import { acceptedCasOf, Authenticator } from './authn/authenticator';
import { SarAuthorizer } from './authz/sar-authorizer';
import { MetaRoutes } from './http/meta-routes';
import { negotiate } from './http/negotiate';
import { requestInfoOf, SANDBOXES } from './http/request-info';
import { handleResource } from './http/resource-handler';
import { forbiddenMessage, sendStatus } from './http/status';
import { handleDataPlane } from './data-plane/data-plane-handler';
import { installDataPlane } from './data-plane/install';
import { isDataPlaneSubresource } from './data-plane/subresources';
import { requestLogLevel } from './http/request-log';
import { UpgradeHandler } from './data-plane/upgrade-handler';
import { HealthChecks } from './health';
import { inflightMetrics, inventoryMetrics, requestMetrics, unprovenRefMetric } from './metrics';
import { OwnerRouting } from './peers/owner-routing';
import { servePeerCall } from './peers/peer-endpoint';
import { OverlayShare } from './peers/overlay-share';
import { PEER_PATH, type PeerCall } from './peers/peer-protocol';
import { renewalScope } from './peers/renewal-scope';
import { LocalVerbs } from './peers/sandbox-verbs';
import { NodeNotices } from './notices/node-notices';
import type { FanOutCaps } from './storage/fan-out-gate';
import { installStorages } from './storage/install';
import { startInventoryInformer } from './storage/inventory-informer';
import { ClaimFollower, startClaimFollower, type FollowedClaim } from './storage/claim-follower';
import { UserMetadataStore } from './storage/user-metadata';
import { servingCertOf } from './tls/serving-cert';
import { DEFAULT_LEASE_TTL_SECONDS } from './storage/lease-policy';
import { LeaseRenewer } from './storage/lease-renewer';
import type { RouterOptions } from './router/router-flags';
import { startRouter, type RunningRouter } from './router/router-server';
import type { E2bOptions } from './e2b/e2b-flags';
import { E2bConfigError, startE2bServer, type RunningE2bServer } from './e2b/e2b-server';
import { EnvdTokens } from './e2b/envd-token';
import type { RelayBounds } from './data-plane/relay-bounds';

export interface SandboxApiserverConfig {
  readonly kubeConfig: KubeConfig;
  /** 0 picks a free port. */
  readonly securePort: number;
  readonly bindAddress?: string;
  readonly tlsCertFile?: string;
  readonly tlsPrivateKeyFile?: string;
  /** The Service the APIService points at; the self-generated cert is valid for <name>.<namespace>.svc. */
  readonly serviceName?: string;
  readonly serviceNamespace?: string;
  /** sandboxd fleet token; empty = every write is refused (fail closed). */
  readonly fleetToken?: string;
  /** How each node's root token is made from the fleet token (default fleet: it is the token). */
  readonly sandboxdTokens?: NodeTokenMode;
  /** Proves the claim references this server writes, and tells them from a node's (renewals); claim-controller holds the same. */
  readonly claimRefKey: OwnerRefKey;
  /** This replica's address as the Service's EndpointSlices list it; '' = it acts alone. */
  readonly advertiseAddress?: string;
  /** CA a peer's serving certificate must chain to; default: this replica's own caBundle. */
  readonly peerCaPem?: string;
  /** The file peerCaPem was read from: read again when it changes (a CA rotation). */
  readonly peerCaFile?: string;
  /** After the peers change, how long a miss also asks every peer and the nodes. */
  readonly peerSettleMs?: number;
  /** Off only for in-process benches: every caller is then treated as system:masters. */
  readonly delegatedAuth?: boolean;
  /** Where kube-apiserver publishes the front-proxy and client CAs; kube-system/extension-apiserver-authentication. */
  readonly authenticationConfigMap?: ConfigMapRef;
  readonly inventoryGraceMs?: number;
  readonly overlayTtlMs?: number;
  /** How long after a claim turned Ready its Sandbox is served from the claim's status until its node publishes it. Default 120 s. */
  readonly claimFollowWindowMs?: number;
  readonly claimIndexMaxBytes?: number;
  /** Lease of a VM that lives until deleted, asked at claim and at each renewal (seconds; 0 = the node's default). Default 900. */
  readonly leaseTtlSeconds?: number;
  /** Node lease renewals per second over every node. Default 500. */
  readonly leaseRenewalsPerSecond?: number;
  readonly watchHistory?: number;
  readonly bookmarkIntervalMs?: number;
  /**
   * How long a stop keeps serving with /readyz failing before it closes the listener and every
   * connection, as kube-apiserver's --shutdown-delay-duration: the Service's endpoints, kube-proxy
   * and the aggregator stop sending requests here first, so a rolling restart answers none of
   * them with a refused connection (which the aggregator turns into a 503 and may count against
   * the APIService's availability). Default 0.
   */
  readonly shutdownDelayMs?: number;
  /**
   * Serve only the NodeInventories this label selector matches (what the publishers' `--inventory-labels`
   * set), as claim-controller's option of the same name: a fleet sharing a control plane with
   * another sees none of the other's nodes. Default: every NodeInventory.
   */
  readonly inventorySelector?: string;
  /**
   * `system:serviceaccount:<namespace>:<name>` of the inventory-publishers: with it (and delegated
   * auth), they tell this replica of changes on their own node between publishes (docs/adr/0007).
   * Empty = off: changes show at the next publish.
   */
  readonly noticePublisher?: string;
  /** Concurrency caps (429 past them); defaults in DEFAULT_INFLIGHT_CAPS. */
  readonly inflight?: Partial<InflightCaps>;
  /** Connections held open at once; default DEFAULT_SERVER_LIMITS.maxConnections. */
  readonly maxConnections?: number;
  /** Requests that ask every node, in flight at once; default DEFAULT_FAN_OUT_CAPS. */
  readonly fanOut?: FanOutCaps;
  /** TokenReviews open at once; a token not cached past it is a 429. Default DEFAULT_TOKEN_REVIEWS_IN_FLIGHT. */
  readonly maxTokenReviewsInFlight?: number;
  /** The largest file (or tar stream) one PUT of sandboxes/files writes; past it a 413. Default 256 MiB. */
  readonly maxFileBytes?: number;
  /** The most stdout + stderr one exec answers with; past it a 413. Default the node's cap (8 MiB). */
  readonly maxExecOutputBytes?: number;
  /** Bytes replies in flight may hold, per replica and per namespace; default DEFAULT_REPLY_MEMORY. */
  readonly replyMemory?: MemoryBudgetCaps;
  /** The longest an exec runs (and what one without timeoutSeconds gets); default 600 s. */
  readonly maxExecTimeoutSeconds?: number;
  /** A port-forward's idle and maximum time; default 30 min and 4 h. */
  readonly portForwardBounds?: RelayBounds;
  /** The sandbox router (agent-sandbox's sandbox-router for microVMs) on a listener of its own; absent = off. */
  readonly router?: RouterOptions;
  /** e2b's control-plane API and envd on a listener of its own; absent = off. */
  readonly e2b?: E2bOptions;
  readonly log?: Logger;
  readonly rng?: Rng;
  /** Where /metrics reads from (main.ts adds the process metrics); default a registry of its own. */
  readonly registry?: Registry;
}

export interface RunningSandboxApiserver {
  readonly url: string;
  readonly port: number;
  /** PEM for the APIService caBundle. */
  readonly caBundle: string;
  /** Resolves once the NodeInventory cache is synced. */
  readonly synced: Promise<boolean>;
  /** The sandbox router's base URL, when it runs. */
  readonly routerUrl?: string;
  /** The sandbox router's tunnel listener (no authentication, a loopback address), when it runs. */
  readonly routerTunnelUrl?: string;
  /** e2b's API base URL (E2B_API_URL and E2B_SANDBOX_URL), when it runs. */
  readonly e2bUrl?: string;
  stop(): Promise<void>;
}

const HEALTH = /^\/(healthz|livez|readyz)(\/[a-z-]+)?$/;

/** Starts the aggregated API server in-process: TLS listener, route table, storages. */
export async function startSandboxApiserver(config: SandboxApiserverConfig): Promise<RunningSandboxApiserver> {
  const log = config.log ?? createLogger({ name: 'sandbox-apiserver' });
  const kc = config.kubeConfig;
  const serving = await servingCertOf(config, log);
  const delegated = config.delegatedAuth ?? true;
  const delegatedAuth = delegated
    ? new DelegatedAuth(kc, {
        alwaysAllowGroups: ['system:masters'],
        maxTokenReviewsInFlight: config.maxTokenReviewsInFlight ?? DEFAULT_TOKEN_REVIEWS_IN_FLIGHT,
      })
    : undefined;
  const authConfig = delegated ? await startAuthenticationConfigWatch(kc, log, config.authenticationConfigMap) : undefined;
  const authenticator = authConfig ? new Authenticator(() => authConfig.current, delegatedAuth) : undefined;
  const authorizer = delegatedAuth ? new SarAuthorizer(delegatedAuth) : undefined;
  const registry = config.registry ?? new Registry();
  const metrics = requestMetrics(registry);
  // the inventories name the node whose token an address gets; the cache exists only once the storages do
  let inventories: () => readonly NodeInventory[] = () => [];
  const clients = config.fleetToken
    ? fleetClients({ fleetToken: config.fleetToken, mode: config.sandboxdTokens ?? 'fleet', inventories: () => inventories() })
    : undefined;
  if (clients === undefined) log.warn({}, 'no sandboxd fleet token: create, delete and lifecycle verbs are refused');
  const storages = installStorages({
    clients,
    graceMs: config.inventoryGraceMs ?? 60_000,
    overlayTtlMs: config.overlayTtlMs ?? 300_000,
    claimIndexMaxBytes: config.claimIndexMaxBytes ?? 64 * 1024 * 1024,
    leaseTtlSeconds: config.leaseTtlSeconds ?? DEFAULT_LEASE_TTL_SECONDS,
    watchHistory: config.watchHistory ?? 10_000,
    rng: config.rng ?? Math.random,
    claimRefKey: config.claimRefKey,
    onShadowRefused: unprovenRefMetric(registry, 'shadow'),
    ...(config.fanOut !== undefined ? { fanOut: config.fanOut } : {}),
    log,
  });
  const { sandboxes } = storages;
  const dataPlane = installDataPlane({
    reads: sandboxes.reads,
    log,
    registry,
    ...(config.maxFileBytes !== undefined ? { maxFileBytes: config.maxFileBytes } : {}),
    ...(config.maxExecOutputBytes !== undefined ? { maxExecOutputBytes: config.maxExecOutputBytes } : {}),
    ...(config.replyMemory !== undefined ? { replyMemory: config.replyMemory } : {}),
    ...(config.maxExecTimeoutSeconds !== undefined ? { maxExecTimeoutSeconds: config.maxExecTimeoutSeconds } : {}),
    ...(config.portForwardBounds !== undefined ? { portForwardBounds: config.portForwardBounds } : {}),
  });
  inventories = () => sandboxes.cache.inventories();
  const metadata = new UserMetadataStore({
    kubeConfig: kc,
    namespace: config.serviceNamespace ?? 'sandbox-system',
    log,
    registry,
    onChange: (ns, name) => sandboxes.cache.touch(ns, name),
  });
  sandboxes.useMetadata(metadata);
  metadata.start();
  const informer = startInventoryInformer(kc, sandboxes.cache, log, registry, config.inventorySelector);
  inventoryMetrics(registry, () => informer.list());
  const bookmarkIntervalMs = config.bookmarkIntervalMs ?? 60_000;
  // the peers must be known before this replica decides who owns a name
  const peersSynced = { check: (): boolean => true };
  const health = new HealthChecks(() => informer.hasSynced() && peersSynced.check());
  const synced = informer.waitForSync().then((ok) => {
    if (!ok) return false;
    sandboxes.markSynced(informer.lastSyncResourceVersion);
    log.info({ sandboxes: sandboxes.cache.size }, 'inventory cache synced');
    return true;
  });
  // started after the inventory sync, so a claim's sandbox its node has published already is not served twice
  const follower = new ClaimFollower({
    cache: sandboxes.cache,
    windowMs: config.claimFollowWindowMs ?? 120_000,
    refKey: config.claimRefKey,
  });
  let following: Informer<FollowedClaim> | undefined;
  void synced.then((ok) => {
    if (ok && !health.shuttingDown) following = startClaimFollower(kc, follower, log, registry);
  });
  const meta = new MetaRoutes();
  const local = new LocalVerbs(sandboxes);
  // replaced by owner routing once the port (and so this replica's peer id) is known
  sandboxes.routeThrough(local);
  const peerIdentity = delegatedAuth !== undefined ? new PeerIdentity(kc, delegatedAuth, 'sandbox-apiserver') : undefined;
  const serviceName = config.serviceName ?? 'sandbox-apiserver';
  const serviceNamespace = config.serviceNamespace ?? 'sandbox-system';
  const inflight = new InflightLimits({ ...DEFAULT_INFLIGHT_CAPS, ...config.inflight });
  inflightMetrics(registry, inflight);
  const notices =
    delegatedAuth !== undefined && config.noticePublisher
      ? new NodeNotices({ cache: sandboxes.cache, auth: delegatedAuth, publisher: config.noticePublisher, log, registry })
      : undefined;

  const admin = { username: 'system:admin', groups: ['system:masters'], extra: {} };
  /** 503 until the caches and the peers are known, as every read and write of a sandbox waits for them. */
  const assertServing = (): void => {
    if (!informer.hasSynced())
      throw new StatusError('ServiceUnavailable', 'the NodeInventory cache is not synced yet', { retryAfterSeconds: 1 });
    if (!peersSynced.check())
      throw new StatusError('ServiceUnavailable', 'the sandbox-apiserver peers are not known yet', { retryAfterSeconds: 1 });
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // while a stop waits for the endpoints to let go, a kept-alive connection (the aggregator's,
    // pinned to this pod) is not reused: the caller's next request opens one to a replica that stays
    if (health.shuttingDown) res.shouldKeepAlive = false;
    const url = requestUrl(req.url, 'https://localhost');
    if (url === undefined) throw new BadRequestError('malformed request target');
    if (HEALTH.test(url.pathname)) return health.serve(url, res);
    if (url.pathname === PEER_PATH && peerIdentity !== undefined) {
      // not counted against the caller's caps: the end user's request holds its slot on the replica that forwarded it
      await peerIdentity.check(req);
      if (!informer.hasSynced())
        throw new StatusError('ServiceUnavailable', 'the NodeInventory cache is not synced yet', { retryAfterSeconds: 1 });
      return servePeerCall(req, res, local, log);
    }
    if (url.pathname === NODE_NOTICE_PATH && notices !== undefined) {
      if (!informer.hasSynced())
        throw new StatusError('ServiceUnavailable', 'the NodeInventory cache is not synced yet', { retryAfterSeconds: 1 });
      return notices.serve(req, res);
    }
    const user = authenticator === undefined ? admin : await authenticator.authenticate(req);
    if (user === undefined) throw new StatusError('Unauthorized', 'Unauthorized');
    const info = requestInfoOf(req.method ?? 'GET', url);
    // held until the response ends or the connection drops, so a watch holds its slot while open
    res.once('close', inflight.acquire(user.username, info.verb === 'watch', info.isResource ? info.namespace : undefined));
    if (authorizer !== undefined) {
      const d = await authorizer.authorize(user, info);
      if (!d.allowed) throw new StatusError('Forbidden', forbiddenMessage({ user: user.username, reason: d.reason, ...info }));
    }
    const stream = info.isResource && info.resource === SANDBOXES && isDataPlaneSubresource(info.subresource);
    // exec and files run as long as their callers make them: a share of the namespace's streams too
    if (stream) res.once('close', inflight.acquireStream(info.namespace));
    if (url.pathname === '/metrics') {
      res.writeHead(200, { 'Content-Type': registry.contentType });
      res.end(await registry.metrics());
      return;
    }
    // exec and files answer raw bytes and tar streams as well as JSON: their own media types
    if (stream) {
      assertServing();
      return handleDataPlane(dataPlane, { req, res, url, info, user: user.username });
    }
    const shape = negotiate(req.headers.accept);
    if (shape === undefined)
      throw new StatusError(
        'NotAcceptable',
        `only the following media types are accepted: application/json, application/json;as=Table;g=meta.k8s.io, application/json;as=PartialObjectMetadata;g=meta.k8s.io`,
      );
    if (!info.isResource) return meta.serve(req, res, url.pathname, shape);
    const storage = storages.byResource.get(info.resource);
    if (storage === undefined) throw new StatusError('NotFound', 'the server could not find the requested resource');
    assertServing();
    await handleResource({ req, res, url, info, shape, storage, bookmarkIntervalMs });
  };

  // Every answer, failures included, is a Status; a 500 says only that it failed, the log says why.
  const serve = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const end = metrics.start(req);
    try {
      await handle(req, res);
    } catch (err) {
      const status = sendStatus(res, err);
      // only a server fault carries the error and its stack; expected answers are one line at most
      const level = requestLogLevel(status, req.url);
      const fields = { method: req.method, path: req.url, code: status.code, reason: status.reason };
      if (level === 'error') log.error({ err, ...fields }, 'request failed');
      else if (level !== 'silent') log[level]({ ...fields, message: status.message }, 'request refused');
    } finally {
      end(res.statusCode);
    }
  };
  // the serving certificate, and the client CAs the front proxy's certificate may chain to: a
  // renewal of either is served to new connections at once, without a restart
  const clientCas = (): { ca?: string[] } => (authConfig ? { ca: acceptedCasOf(authConfig.current) } : {});
  const server: Server = createServer(
    { ...serving.pair.current, requestCert: true, rejectUnauthorized: false, ...clientCas() },
    guardRequests(serve, { log, fail: (res, err) => sendStatus(res, err) }),
  );
  serveWatched(server, serving.pair, clientCas);
  // a watch is a long response, not a long request: the request deadline does not end it
  limitServer(server, {
    keepAliveTimeoutMs: 120_000,
    headersTimeoutMs: 30_000,
    requestTimeoutMs: 60_000,
    ...(config.maxConnections !== undefined ? { maxConnections: config.maxConnections } : {}),
  });
  // a port-forward is an upgrade: authenticated and authorized as a request is, then relayed
  const upgrades = new UpgradeHandler(
    {
      authenticate: async (req) => (authenticator === undefined ? admin : authenticator.authenticate(req)),
      authorize: async (user, info) => {
        if (authorizer === undefined) return;
        const d = await authorizer.authorize(user, info);
        if (!d.allowed) throw new StatusError('Forbidden', forbiddenMessage({ user: user.username, reason: d.reason, ...info }));
      },
      ready: () => {
        if (health.shuttingDown)
          throw new StatusError('ServiceUnavailable', 'sandbox-apiserver is shutting down', { retryAfterSeconds: 1 });
        assertServing();
      },
      acquire: (user, namespace) => {
        const request = inflight.acquire(user.username, false);
        try {
          const stream = inflight.acquireStream(namespace);
          return () => {
            stream();
            request();
          };
        } catch (err) {
          request();
          throw err;
        }
      },
    },
    dataPlane.portForward,
    log,
  );
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => upgrades.handle(req, socket, head));
  authConfig?.onChange(() => server.setSecureContext({ ...serving.pair.current, ...clientCas() }));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.securePort, config.bindAddress ?? '0.0.0.0', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const peers = new PeerSet(config.advertiseAddress ? peerId(config.advertiseAddress, port) : '');
  const peerClient =
    peers.self !== '' && peerIdentity !== undefined
      ? new PeerClient<PeerCall>({
          kubeConfig: kc,
          path: PEER_PATH,
          caPem: config.peerCaPem ?? serving.caBundle,
          serverName: `${serviceName}.${serviceNamespace}.svc`,
        })
      : undefined;
  const peerInformer =
    peerClient !== undefined
      ? startPeerInformer(kc, peers, { name: serviceName, namespace: serviceNamespace, role: 'sandbox-apiserver' }, log)
      : undefined;
  if (peerInformer !== undefined) peersSynced.check = () => peerInformer.hasSynced();
  const peerCa = peerClient !== undefined && config.peerCaFile ? await watchCaFile(config.peerCaFile, log) : undefined;
  peerCa?.onChange(({ ca }) => peerClient?.trust(ca));
  if (peerClient === undefined) log.info({}, 'no --advertise-address (or no delegated auth): this replica serves every name itself');
  sandboxes.routeThrough(new OwnerRouting({ local, peers, client: peerClient, settleMs: config.peerSettleMs ?? 60_000, log }));
  if (peerClient !== undefined) local.share = new OverlayShare({ storage: sandboxes.reads, peers, client: peerClient, log });
  log.info({ port, self: peers.self }, 'serving agents.x-k8s.io/v1beta1');
  const router: RunningRouter | undefined = config.router
    ? await startRouter({
        host: config.router.host,
        port: config.router.port,
        ...(config.router.tls ? { tls: serving.pair } : {}),
        authentication: config.router.authentication,
        ...(config.router.tunnel !== undefined ? { tunnel: config.router.tunnel } : {}),
        ...(delegatedAuth !== undefined ? { delegatedAuth } : {}),
        // the one token cache of this replica, shared with exec, files and portforward
        access: dataPlane.access,
        ready: () => informer.hasSynced(),
        proxyTimeoutMs: config.router.proxyTimeoutMs,
        maxRelays: config.router.maxRelays,
        maxRelaysPerNamespace: config.router.maxRelaysPerNamespace,
        relayIdleTimeoutMs: config.router.relayIdleTimeoutMs,
        relayMaxDurationMs: config.router.relayMaxDurationMs,
        ...(config.maxConnections !== undefined ? { maxConnections: config.maxConnections } : {}),
        log,
        registry,
      })
    : undefined;
  let e2b: RunningE2bServer | undefined;
  if (config.e2b !== undefined) {
    if (delegatedAuth === undefined)
      throw new E2bConfigError("--e2b-bind-address needs delegated authentication: e2b's API keys are Kubernetes tokens");
    e2b = await startE2bServer({
      host: config.e2b.host,
      port: config.e2b.port,
      ...(config.e2b.tls ? { tls: serving.pair } : {}),
      kubeConfig: kc,
      auth: delegatedAuth,
      access: dataPlane.access,
      tokens: new EnvdTokens(config.claimRefKey),
      pausedOf: (namespace, name) => {
        const row = sandboxes.cache.get(namespace, name);
        if (row === undefined) return undefined;
        return (sandboxes.cache.objectOf(row).metadata.labels?.[SANDBOX_LABELS.phase] ?? '').toLowerCase() === 'paused';
      },
      ...(config.e2b.defaultNamespace !== undefined ? { defaultNamespace: config.e2b.defaultNamespace } : {}),
      ...(config.maxConnections !== undefined ? { maxConnections: config.maxConnections } : {}),
      log,
    });
  }
  const renewer = new LeaseRenewer({
    cache: sandboxes.cache,
    router: sandboxes.reads.router,
    leaseTtlSeconds: config.leaseTtlSeconds ?? DEFAULT_LEASE_TTL_SECONDS,
    ratePerSecond: config.leaseRenewalsPerSecond ?? 500,
    log,
    refKey: config.claimRefKey,
    onUnproven: unprovenRefMetric(registry, 'renew'),
    renewsHere: renewalScope({
      peers,
      peered: peerClient !== undefined,
      peersKnown: () => peersSynced.check(),
      settleMs: config.peerSettleMs ?? 60_000,
    }),
  });
  const renewing = new AbortController();
  // starts once the cache is synced; a stop before that never waits on the sync
  let renewed: Promise<void> | undefined;
  void synced.then((ok) => {
    if (ok && !renewing.signal.aborted) renewed = renewer.run(renewing.signal);
  });
  return {
    url: `https://127.0.0.1:${port}`,
    port,
    caBundle: serving.caBundle,
    synced,
    ...(router !== undefined ? { routerUrl: router.url } : {}),
    ...(router?.tunnelUrl !== undefined ? { routerTunnelUrl: router.tunnelUrl } : {}),
    ...(e2b !== undefined ? { e2bUrl: e2b.url } : {}),
    async stop() {
      health.shuttingDown = true;
      // still serving, watches included, while the endpoints let go of this replica
      if (config.shutdownDelayMs) await new Promise((resolve) => setTimeout(resolve, config.shutdownDelayMs));
      renewing.abort();
      await renewed;
      sandboxes.stop();
      upgrades.closeAll();
      await router?.stop();
      await e2b?.stop();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      serving.pair.close();
      peerCa?.close();
      await informer.stop();
      await following?.stop();
      await metadata.stop();
      await peerInformer?.stop();
      peerClient?.close();
      await authConfig?.stop();
      await clients?.close();
    },
  };
}
