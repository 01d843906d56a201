import type { KubeConfig } from '@kubernetes/client-node';
import {
  controller,
  createEventRecorder,
  OwnWrites,
  createLogger,
  DEFAULT_INFLIGHT_CAPS,
  defaultIdentity,
  InflightLimits,
  involvedObjectOf,
  Manager,
  managerOptionsFromFlags,
  parseBindAddress,
  type Logger,
} from '@sandbox-scale/kube-runtime';
import { CONDITION_REASONS, FIELD_MANAGERS, LEASE_NAMES, TokenBucket, type OwnerRefKey } from '@sandbox-scale/scale-core';
import { fleetClients } from '@sandbox-scale/sandboxd-client';
import { Registry } from 'prom-client';
import { ClaimControllerFlagsSchema, type ClaimControllerFlags } from './config';
import { CLAIM_REASONS, ClaimReconciler } from './controllers/claim-reconciler';
import { ClaimClient } from './record/claim-client';
import { EarlierDeliveries } from './controllers/earlier-deliveries';
import { OrphanReconciler } from './controllers/orphan-reconciler';
import { ClaimGateway } from './gateway/claim-gateway';
import { ClaimRecorder } from './record/claim-recorder';
import { FastPathRecorder, type FastPathDelivery } from './record/fast-path-recorder';
import { ClaimNames } from './http/claim-names';
import { FastPathCap } from './http/fast-path-cap';
import { RecordQueue } from './record/record-queue';
import { SecretAccess, selfSubjectReviewer } from './record/secret-access';
import { startFastPathServer } from './http/fast-path-server';
import { FastPathClaims } from './http/fast-path-claims';
import { startFastPathPeering } from './http/fast-path-peering';
import { fastPathAuth, ReviewAuthorizer } from './http/review-client';
import { AnswersInFlight } from './http/answers-in-flight';
import { claimControllerMetrics, upstreamClaimMetrics } from './metrics';
import { BoundClaimsByNode } from './controllers/inventory-presence';
import {
  claimsMissingFromInventory,
  claimsOfPool,
  claimsWaitingForCapacity,
  createCaches,
  createOrphanPass,
  fastPathClaimNames,
  poolResolver,
} from './wiring';

/** Reason of the series event on a pool whose fast-path claims were recorded Bound. */
export const FAST_PATH_RECORDED = 'FastPathClaimsRecorded';
/** Reason of the series event on a pool whose claims were bound by the claim controller (no Event per claim). */
export const CLAIMS_BOUND = 'ClaimsBound';

export interface ClaimControllerOptions {
  kubeConfig: KubeConfig;
  /** '' refuses every node write (fail closed). */
  fleetToken: string;
  /** Proves the claim references this controller writes on nodes; sandbox-apiserver holds the same key. */
  claimRefKey: OwnerRefKey;
  /** Flags; omitted ones take their defaults. */
  flags?: Partial<ClaimControllerFlags>;
  log?: Logger;
  registry?: Registry;
  identity?: string;
  /** Label selector of the claims this controller reconciles; default every claim. */
  claimSelector?: string;
  /** Label selector of the NodeInventories (nodes) this controller routes to and asks; default every one. */
  inventorySelector?: string;
  /** Whether claim Secrets may be written in a namespace; default SelfSubjectAccessReviews with the default cache times. */
  secretAccess?: SecretAccess;
  /** How long one node listing answers for claims older than the leadership; default DEFAULT_EARLIER_LISTING_MAX_AGE_MS. */
  earlierListingMaxAgeMs?: number;
}

export interface ClaimControllerHandle {
  /** https://host:port of POST /v1/claims, or undefined when it is off. */
  fastPathUrl: string | undefined;
  gateway: ClaimGateway;
  recordQueue: RecordQueue<FastPathDelivery>;
  orphans: OrphanReconciler;
  manager: Manager;
  registry: Registry;
  /** Settles when the manager stops (rejects with why it failed). */
  done: Promise<void>;
  /** Graceful stop: controllers stop and the Lease is handed over while the fast path closes, then the record queue drains. */
  stop(): Promise<void>;
}

/** Builds and starts the whole controller in-process (main.ts, tests, benches and local runs). */
export async function startClaimController(o: ClaimControllerOptions): Promise<ClaimControllerHandle> {
  const flags: ClaimControllerFlags = { ...ClaimControllerFlagsSchema.parse({}), ...o.flags };
  const log = o.log ?? createLogger({ name: 'claim-controller' });
  const registry = o.registry ?? new Registry();
  const kc = o.kubeConfig;
  const identity = o.identity ?? defaultIdentity();
  const metrics = claimControllerMetrics(registry);
  const caches = createCaches(kc, log, registry, o.claimSelector, o.inventorySelector);
  // agent-sandbox's metric names; its sandbox gauge is the leader's (set by the leadership clock below)
  const upstream = upstreamClaimMetrics(registry, {
    claims: caches.claims,
    pools: caches.pools,
    inventories: () => caches.inventories.list(),
    isLeader: () => leadership.since !== undefined,
  });
  const clients = fleetClients({ fleetToken: o.fleetToken, mode: flags.sandboxdTokens, inventories: () => caches.inventories.list() });
  const events = createEventRecorder(kc, {
    reportingController: FIELD_MANAGERS.claimController,
    reportingInstance: identity,
    log,
    registry,
  });
  // the watch events of the claim controller's own writes do not reconcile again: the pass that wrote acted on it
  const ownWrites = new OwnWrites();
  const recorder = new ClaimRecorder({
    kubeConfig: kc,
    writes: ownWrites,
    onBound: (claim, a, adopted, fastPath) => {
      upstream.onClaimBound(claim, a, fastPath);
      // A claim bound on the success path is one of a stream: an Event per claim would be one
      // more API write per claim (the fifth, on the API server's CPU, which a burst of claims is
      // bound by), telling what the claim's Bound condition already says (node, sandbox, and
      // since when: its lastTransitionTime). Its pool's series event says that claims were bound
      // (one Event per pool and kind, its count written at most every flush interval, as
      // client-go's correlator aggregates similar events). What is worth a line of its own stays
      // per claim: an adoption after a failover, a cold start (its own events), and every Warning.
      const pool = adopted ? undefined : caches.pools.get(claim.metadata.namespace ?? '', claim.spec.warmPoolRef.name);
      if (pool) {
        events.record(
          involvedObjectOf(pool),
          fastPath
            ? {
                type: 'Normal',
                reason: FAST_PATH_RECORDED,
                action: 'Bind',
                note: 'fast-path claims of this pool recorded Bound; the Bound condition of each names its node and sandbox',
              }
            : {
                type: 'Normal',
                reason: CLAIMS_BOUND,
                action: 'Bind',
                note: 'claims of this pool bound; the Bound condition of each names its node and sandbox, and its lastTransitionTime when',
              },
        );
        return;
      }
      events.record(involvedObjectOf(claim), {
        type: 'Normal',
        reason: adopted ? 'Adopted' : CONDITION_REASONS.nodeLocalClaim,
        action: 'Bind',
        note: `node ${a.node} handed over sandbox ${a.claimId}${adopted ? ' (record adopted from the node)' : ''}`,
      });
    },
  });
  // the fast path's answers in flight: while they are served only a few async records run at once
  const answers = new AnswersInFlight({ maxDeferMs: flags.fastPathRecordDefer });
  const fastRecorder = new FastPathRecorder(kc, recorder, { yieldTo: (signal) => answers.turn(signal) });
  const cap = new FastPathCap({
    maxPerNamespace: flags.fastPathMaxClaimsPerNamespace,
    recorded: fastPathClaimNames(caches.claims),
    holdMs: 2 * flags.orphanInterval,
  });
  const recordQueue = new RecordQueue<FastPathDelivery>({
    recorder: fastRecorder,
    log,
    concurrency: flags.recordConcurrency,
    attempts: flags.recordAttempts,
    maxPending: flags.recordQueueMaxPending,
    onOutcome: (outcome, target) => {
      metrics.onRecord(outcome);
      // the claim object of a record that gave up (if its create landed) says so to `kubectl describe`
      const claim = outcome === 'failed' ? caches.claims.get(target.namespace, target.name) : undefined;
      if (claim)
        events.record(involvedObjectOf(claim), {
          type: 'Warning',
          reason: CLAIM_REASONS.recordFailed,
          action: 'Bind',
          note: 'the Bound record of this fast-path claim could not be written; the orphan pass records it from the node',
        });
      // a delivery left unrecorded still counts against the cap until the orphan pass records it
      if (outcome === 'recorded' || outcome === 'refused') cap.release(target);
    },
  });
  const inventories = (): ReturnType<typeof caches.inventories.list> => caches.inventories.list();
  const gateway = new ClaimGateway({
    clients,
    fleetToken: o.fleetToken,
    refKey: o.claimRefKey,
    inventories,
    records: recordQueue,
    log,
    coldClaimTimeoutMs: flags.coldClaimTimeout,
    failedNodeCooldownMs: flags.failedNodeCooldown,
    onClaim: metrics.onClaim,
    onAddressRefused: metrics.onAddressRefused,
  });
  const claimClient = new ClaimClient(kc, ownWrites);
  // Whether claim Secrets may be written in a namespace: asked of RBAC before a VM is claimed there.
  const secretAccess = o.secretAccess ?? new SecretAccess({ review: selfSubjectReviewer(kc) });
  // set when this process wins the Lease (before the claim controller starts), cleared when it stops leading
  const leadership: { since: Date | undefined } = { since: undefined };
  const leaseTtlSeconds = Math.ceil(flags.sandboxLeaseTtl / 1000);
  const earlier = new EarlierDeliveries({
    nodes: inventories,
    list: (inv, signal) => gateway.listDeliveries(inv, undefined, signal),
    withToken: (d, signal) => gateway.withToken(d, signal),
    ...(o.earlierListingMaxAgeMs !== undefined ? { maxAgeMs: o.earlierListingMaxAgeMs } : {}),
  });
  // Bound claims by node, from the claim cache: a node's inventory is compared with its own claims only
  const boundByNode = new BoundClaimsByNode();
  caches.claims.on({
    add: (c) => boundByNode.observe(c),
    update: (c) => boundByNode.observe(c),
    delete: (c) => boundByNode.forget(c),
  });
  const reconciler = new ClaimReconciler({
    ...caches,
    gateway,
    earlier,
    recorder,
    claimClient,
    events,
    secretAccess,
    namespaceRecheckMs: flags.namespaceRecheckInterval,
    leadingSince: () => leadership.since,
    leaseTtlSeconds,
    renewals: new TokenBucket({ ratePerSecond: flags.leaseRenewalsPerSecond }),
    onRenewal: metrics.onRenewal,
    presence: boundByNode,
  });
  const claimController = controller({ name: 'sandboxclaim', reconciler, log, registry, concurrency: flags.maxConcurrentReconciles })
    .for(caches.claims, { predicates: [ownWrites.predicate()] })
    .watches(caches.inventories, claimsWaitingForCapacity(caches.claims))
    .watches(caches.inventories, claimsMissingFromInventory(caches.inventories, boundByNode))
    .watches(caches.pools, claimsOfPool(caches.claims))
    .build();
  // an update that came in while a write of its claim was in flight, and was not that write
  ownWrites.releaseTo((c) => claimController.enqueue({ namespace: c.metadata?.namespace ?? '', name: c.metadata?.name ?? '' }));
  const orphans = createOrphanPass(caches, {
    gateway,
    recorder,
    fastPath: fastRecorder,
    inventories,
    claims: claimClient,
    refKey: o.claimRefKey,
    secretAccess,
    intervalMs: flags.orphanInterval,
    log,
    onItem: metrics.onOrphan,
  });

  const manager = new Manager(managerOptionsFromFlags(flags, { log, registry, kubeConfig: kc, leaseName: LEASE_NAMES.claimController }));
  for (const c of Object.values(caches)) manager.addInformer(c);
  manager.add({
    name: 'leadership-clock',
    start: (signal) =>
      new Promise<void>((resolve) => {
        leadership.since = new Date();
        signal.addEventListener(
          'abort',
          () => {
            leadership.since = undefined;
            resolve();
          },
          { once: true },
        );
      }),
  });
  manager.add(events).add(claimController).add(orphans);
  manager.add({
    name: 'record-queue',
    needLeaderElection: false,
    start: (signal) => new Promise<void>((r) => signal.addEventListener('abort', () => r(), { once: true })),
    drain: () => recordQueue.close(),
  });
  const ac = new AbortController();
  const done = manager.start(ac.signal);
  await Promise.race([Promise.all(Object.values(caches).map((c) => c.waitForSync(ac.signal))), done]);

  // fast-path names taken: the cache, plus deliveries whose record the cache has not shown yet
  const names = new ClaimNames({ cached: (t) => caches.claims.get(t.namespace, t.name) !== undefined, holdMs: 2 * flags.orphanInterval });
  // a record in the cache is counted from there: the hold of its name and its place under the cap
  // (this replica's delivery, or a peer's reservation) are let go
  caches.claims.on({
    add: (c) => {
      const t = { namespace: c.metadata.namespace ?? '', name: c.metadata.name ?? '' };
      names.release(t);
      cap.release(t);
    },
  });
  const bind = parseBindAddress(flags.fastPathBindAddress);
  // one replica serves each namespace's fast path, so its names and cap hold across replicas;
  // while the replicas change, deliveries also reserve on the others for as long as a name is held
  const peering = bind
    ? startFastPathPeering(kc, flags, { port: bind.port, settleMs: names.holdMs, log, onCall: metrics.onFastPathPeerCall })
    : undefined;
  const claims = new FastPathClaims({
    resolvePool: poolResolver(caches),
    names,
    cap,
    secretAccess: (namespace) => secretAccess.check(namespace),
    deliver: (t) => gateway.deliverFastPath({ ...t, ttlSeconds: t.ttlSeconds || leaseTtlSeconds, bounded: t.ttlSeconds > 0 }),
    ...(peering ? { peers: peering.peers } : {}),
    log,
  });
  const fastPath = bind
    ? await startFastPathServer({
        host: bind.host || '0.0.0.0',
        port: bind.port,
        certFile: flags.tlsCertFile,
        keyFile: flags.tlsPrivateKeyFile,
        maxConnections: flags.fastPathMaxConnections,
        log,
        deps: {
          authorizer: new ReviewAuthorizer(fastPathAuth(kc, flags.fastPathAudiences, flags.fastPathMaxTokenReviewsInFlight)),
          claims,
          ...(peering ? { peerIdentity: peering.identity } : {}),
          log,
          inflight: new InflightLimits({ ...DEFAULT_INFLIGHT_CAPS, maxRequestsPerUser: flags.fastPathMaxInflightPerUser }),
          onResponse: metrics.onFastPath,
          answers,
        },
      })
    : undefined;

  return {
    fastPathUrl: fastPath?.url,
    gateway,
    recordQueue,
    orphans,
    manager,
    registry,
    done,
    stop: async () => {
      // the Lease goes to a standby while the fast path closes: its last answers only feed the
      // record queue, which drains after, and SandboxClaims need not wait for them to be bound
      await Promise.all([
        manager.stepDown(),
        (async () => {
          await fastPath?.close();
          await peering?.stop();
        })(),
      ]);
      ac.abort();
      await done.catch(() => undefined);
      await clients.close();
    },
  };
}
