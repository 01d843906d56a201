import {
  type EventInput,
  type EventRecorder,
  type Informer,
  involvedObjectOf,
  isConflict,
  isForbidden,
  isNotFound,
  type ReconcileContext,
  type Reconciler,
  type ReconcileRequest,
  type ReconcileResult,
} from '@sandbox-scale/kube-runtime';
import {
  ANNOTATIONS,
  backoffDelayMs,
  CONDITION_REASONS,
  CONDITION_TYPES,
  isClaimRoutingNotConfigured,
  isNoWarmCapacity,
  OWNER_KINDS,
  poolKeyForTemplate,
  refusedClaimFields,
  refusedTemplateFields,
  type ColdStartPolicy,
  type PoolKey,
  type SandboxClaim,
  type SandboxTemplate,
  type SandboxWarmPool,
  type Rng,
  type TokenBucket,
} from '@sandbox-scale/scale-core';
import { isNotFound as isSandboxGone, asSandboxdHttpError } from '@sandbox-scale/sandboxd-client';
import type { Assignment } from '../gateway/assignment';
import type { ClaimGateway } from '../gateway/claim-gateway';
import { hasFinalizer, type ClaimClient } from '../record/claim-client';
import type { ClaimRecorder } from '../record/claim-recorder';
import { boundClaimId, recordsSandbox } from '../record/claim-status';
import { namespaceNotEnabledMessage, type SecretAccess, type SecretAccessDecision } from '../record/secret-access';
import { currentLease, nextLeaseStep, parseTime, renewAtMs, type NodeLease } from './claim-lease';
import { claimTtl, createdBefore, type FieldProblem } from './claim-lifecycle';
import type { BoundClaimsByNode } from './inventory-presence';
import { recordFailure } from './record-failure';
import type { EarlierDeliveries } from './earlier-deliveries';

export const CLAIM_REASONS = {
  invalidSpec: 'InvalidSpec',
  routingNotConfigured: 'ClaimRoutingNotConfigured',
  released: 'Released',
  claimFailed: 'ClaimFailed',
  /** Bound=False while a node boots a VM for the claim (pool coldStart WhenNoWarmCapacity); also the events of a cold start. */
  coldStart: 'ColdStart',
  /** Bound=False: the node no longer has the sandbox (its lease ran out, or the node lost it). */
  sandboxLost: 'SandboxLost',
  /** A node lease renewal failed; retried before the lease runs out. */
  leaseRenewFailed: 'LeaseRenewFailed',
  /** Bound=False before any VM is claimed: RBAC does not let claim-controller write the claim's Secret in its namespace. */
  namespaceNotEnabled: 'NamespaceNotEnabled',
  /** Bound=False after a node delivered: the Bound record (token Secret or status) could not be written; the VM is kept. */
  recordFailed: 'RecordFailed',
} as const;
/** Bound reasons after which the claim holds no sandbox any more: nothing to renew or release. */
const FINISHED_REASONS: ReadonlySet<string> = new Set([CONDITION_REASONS.claimExpired, CLAIM_REASONS.sandboxLost]);
const WAIT_FOR_CONFIG_MS = 30_000;
const FAST_PATH_GRACE_MS = 2_000;
/**
 * How often a claim refused for its namespace asks again. RBAC changes send no event this
 * controller can watch (it may not read RoleBindings), so a refused claim polls at this modest
 * pace; the access cache holds a refusal for less than this, so each recheck is a fresh review.
 */
export const DEFAULT_NAMESPACE_RECHECK_MS = 20_000;

/** The owner a SandboxClaim's deliveries carry on the node: this claim object, by uid. */
function claimOwner(claim: SandboxClaim): { kind: typeof OWNER_KINDS.claim; uid: string } {
  return { kind: OWNER_KINDS.claim, uid: claim.metadata.uid ?? '' };
}

export interface ClaimReconcilerOptions {
  claims: Pick<Informer<SandboxClaim>, 'get' | 'on'>;
  pools: Pick<Informer<SandboxWarmPool>, 'get'>;
  templates: Pick<Informer<SandboxTemplate>, 'get'>;
  gateway: Pick<ClaimGateway, 'deliver' | 'coldDeliver' | 'release' | 'renew' | 'holds' | 'claimRefOf'>;
  /** Deliveries made before this leadership (claims older than it are looked up there before claiming). */
  earlier: Pick<EarlierDeliveries, 'find'>;
  recorder: Pick<ClaimRecorder, 'recordBoundOn'>;
  /** The claim through the API server: live reads, finalizer, conditions, delete. */
  claimClient: Pick<ClaimClient, 'get' | 'setCondition' | 'addFinalizer' | 'removeFinalizer' | 'delete'>;
  events: Pick<EventRecorder, 'record'>;
  /**
   * Since when this process leads (undefined: unknown). A claim created before it may have been
   * delivered by an earlier process or leader, so its nodes are asked before claiming: the
   * process start is not enough, since a standby that takes over later would skip the claims
   * created while it waited.
   */
  leadingSince: () => Date | undefined;
  /** Seconds of node lease asked for a claim without shutdownTime (claim and renewals); 0 = the node's default. */
  leaseTtlSeconds?: number;
  /** Bounds node lease renewals over all claims; a renewal refused a token is requeued until one is free. */
  renewals?: TokenBucket;
  onRenewal?: (outcome: 'renewed' | 'lost' | 'deferred' | 'error') => void;
  /** Claims a node's inventory showed without their sandbox: their node is asked whether it still has it. */
  presence?: Pick<BoundClaimsByNode, 'takeSuspect'>;
  /** Whether claim Secrets may be written in a namespace; asked before any VM is claimed. */
  secretAccess: Pick<SecretAccess, 'check' | 'forget'>;
  /** Requeue of a claim refused for its namespace. Default DEFAULT_NAMESPACE_RECHECK_MS. */
  namespaceRecheckMs?: number;
  now?: () => Date;
  rng?: Rng;
}

/**
 * SandboxClaim -> a node-local claim -> the Bound record; delete or expiry -> release on the
 * node -> the finalizer goes. Level-based: every pass reads the claim afresh, and a claim is
 * never claimed twice (status, a live re-read, the node's own list after a restart, and the
 * deliveries this process made but could not record yet).
 */
export class ClaimReconciler implements Reconciler {
  readonly #unrecorded = new Map<string, Assignment>();
  readonly #capacityMisses = new Map<string, number>();
  /** Node leases this process renewed, by ns/name (see NodeLease for why they live here only). */
  readonly #leases = new Map<string, NodeLease>();
  readonly #renewFailures = new Map<string, number>();
  readonly #recordFailures = new Map<string, number>();
  /** Claims this process recorded Bound, by ns/name, until the cache shows that write (see #ownView). */
  readonly #bound = new Map<string, SandboxClaim>();
  constructor(private readonly o: ClaimReconcilerOptions) {
    o.claims.on({ update: (c) => this.#cacheCaughtUp(c), delete: (c) => this.#bound.delete(`${c.metadata.namespace}/${c.metadata.name}`) });
  }

  /** Claims recorded Bound whose write the cache has not shown yet (a figure for leak checks). */
  get pendingOwnWrites(): number {
    return this.#bound.size;
  }

  async reconcile(req: ReconcileRequest, ctx: ReconcileContext): Promise<ReconcileResult | void> {
    const key = `${req.namespace}/${req.name}`;
    const cached = this.o.claims.get(req.namespace, req.name);
    if (cached === undefined) return this.#gone(req, ctx);
    const claim = this.#ownView(key, cached);
    if (claim.metadata.deletionTimestamp) return this.#finalize(claim, ctx);
    const pending = this.#unrecorded.get(key);
    if (recordsSandbox(claim)) {
      // A Bound record half written (status landed, the token Secret did not): finish it.
      if (pending !== undefined && pending.claimId === boundClaimId(claim))
        return this.#record(await this.#withFinalizer(claim, ctx), pending, ctx, true);
      if (pending) this.#forget(key); // Bound to another sandbox by another writer: nothing of this delivery is left to record
      return this.#whileBound(await this.#withFinalizer(claim, ctx), ctx);
    }
    if (claim.metadata.annotations?.[ANNOTATIONS.claimId]) {
      await this.#withFinalizer(claim, ctx);
      return { requeueAfterMs: FAST_PATH_GRACE_MS };
    }
    return this.#bind(claim, ctx);
  }

  /**
   * The claim as this process last wrote it while the cache still shows an older version: our
   * own Bound write is not yet in the cache (watch events arrive in order, so a cached version
   * that does not show it is older than it). Dropped once the cache reaches that version.
   */
  #ownView(key: string, cached: SandboxClaim): SandboxClaim {
    const mine = this.#bound.get(key);
    if (mine === undefined) return cached;
    if (mine.metadata.uid !== cached.metadata.uid || recordsSandbox(cached)) {
      this.#bound.delete(key);
      return cached;
    }
    return mine;
  }

  /** The cache reached (or passed) a version this process wrote, or the claim is gone: it answers alone again. */
  #cacheCaughtUp(c: SandboxClaim): void {
    const key = `${c.metadata.namespace}/${c.metadata.name}`;
    const mine = this.#bound.get(key);
    if (
      mine !== undefined &&
      (mine.metadata.resourceVersion === c.metadata.resourceVersion || mine.metadata.uid !== c.metadata.uid || recordsSandbox(c))
    )
      this.#bound.delete(key);
  }

  /** The finalizer goes on before a delivery is recorded, so a delete can never skip the release. */
  async #withFinalizer(claim: SandboxClaim, ctx: ReconcileContext): Promise<SandboxClaim> {
    return hasFinalizer(claim) ? claim : this.o.claimClient.addFinalizer(claim, ctx.signal);
  }

  /**
   * Decides on the cached claim: the cache answers everything but our own latest write, which
   * #ownView supplies. The finalizer patch (when admission did not add it) runs concurrently with
   * the node claim: until it lands the delivery is held in #unrecorded, so a claim deleted
   * meanwhile (a 404 on the patch) gets its VM released by #gone, and the Bound record, written
   * only onto the patched object, can never precede the finalizer.
   */
  async #bind(claim: SandboxClaim, ctx: ReconcileContext): Promise<ReconcileResult | void> {
    const namespace = claim.metadata.namespace ?? '';
    const name = claim.metadata.name ?? '';
    const req = { namespace, name };
    const key = `${namespace}/${name}`;
    const pending = this.#unrecorded.get(key) ?? (await this.#earlierDelivery(claim, ctx));
    if (pending) {
      const current = await this.#settled(this.#withFinalizer(claim, ctx), req, ctx);
      return current && this.#record(current, pending, ctx, true);
    }
    const resolved = this.#resolve(claim);
    if ('problem' in resolved) return this.#pendingCondition(claim, resolved.reason, resolved.problem, resolved.retry);
    // Before a VM is spent: a claim whose token Secret could not be written would hold it for nothing.
    const access = await this.o.secretAccess.check(namespace);
    if (!access.allowed) return this.#namespaceNotEnabled(claim, access);
    const ttlSeconds = resolved.ttlSeconds || (this.o.leaseTtlSeconds ?? 0);
    // The finalizer patch (where admission did not add it) goes out with the first node's claim
    // request and carries that node as the delivery-node hint, so the next leader looks there first.
    let finalizer: Promise<SandboxClaim> | undefined;
    const startFinalizer = (node?: string): Promise<SandboxClaim> => {
      const p = hasFinalizer(claim) ? Promise.resolve(claim) : this.o.claimClient.addFinalizer(claim, ctx.signal, node);
      // awaited below; a rejection while the node call runs is not unhandled
      p.catch(() => undefined);
      return p;
    };
    const gwReq = { namespace, name, owner: claimOwner(claim), key: resolved.key, ttlSeconds, signal: ctx.signal };
    let a: Assignment;
    try {
      a = await this.o.gateway.deliver({ ...gwReq, onFirstNode: (node) => (finalizer ??= startFinalizer(node)) });
    } catch (err) {
      // nothing was claimed: a failed finalizer patch is retried before anything else
      const current = await (finalizer ?? startFinalizer());
      if (!(isNoWarmCapacity(err) && resolved.coldStart === 'WhenNoWarmCapacity')) return this.#claimFailed(current, err);
      return this.#coldStart(current, gwReq, ctx);
    }
    this.#delivered(key, a, ctx, 'node delivered a sandbox');
    const current = await this.#settled(finalizer ?? startFinalizer(), req, ctx);
    if (current === undefined) return;
    return this.#record(current, a, ctx, false);
  }

  /** The finalizer write's outcome; undefined when the claim is gone (its pending delivery then released by #gone). */
  async #settled(finalizer: Promise<SandboxClaim>, req: ReconcileRequest, ctx: ReconcileContext): Promise<SandboxClaim | undefined> {
    try {
      return await finalizer;
    } catch (err) {
      if (!isNotFound(err)) throw err;
      await this.#gone(req, ctx);
      return undefined;
    }
  }

  /**
   * No node has a warm VM of the key and the pool allows a cold claim: say so first (the boot
   * takes seconds and the claimant should see why it waits), then claim cold. When every
   * routable node refuses (429), it is NoWarmCapacity with backoff, as for a pool that never
   * cold-starts; the inventory watch wakes the claim when warm capacity appears.
   */
  async #coldStart(
    claim: SandboxClaim,
    req: Parameters<ClaimGateway['coldDeliver']>[0],
    ctx: ReconcileContext,
  ): Promise<ReconcileResult | void> {
    const key = `${req.namespace}/${req.name}`;
    const message = `spec.warmPoolRef.name: no node has a warm sandbox of ${req.key.template}; cold-starting one on a routable node (the pool allows coldStart WhenNoWarmCapacity)`;
    const starting = { status: 'False' as const, reason: CLAIM_REASONS.coldStart, message };
    const started = await this.o.claimClient.setCondition(claim, { type: CONDITION_TYPES.bound, ...starting }, this.#now(), [
      { type: CONDITION_TYPES.ready, ...starting },
    ]);
    this.#event(claim, { type: 'Normal', reason: CLAIM_REASONS.coldStart, action: 'Claim', note: message });
    const t0 = performance.now();
    let a: Assignment;
    try {
      a = await this.o.gateway.coldDeliver(req);
    } catch (err) {
      // Decide the next condition against the ColdStart this pass wrote (the object the write
      // returned, newer than the cache), not the read before it: no live read is needed.
      return this.#claimFailed(started, err);
    }
    this.#delivered(key, a, ctx, 'node cold-started a sandbox', 'info');
    const ms = Math.round(performance.now() - t0);
    this.#event(claim, {
      type: 'Normal',
      reason: CLAIM_REASONS.coldStart,
      action: 'Bind',
      note: `node ${a.node} cold-started sandbox ${a.claimId} in ${ms} ms (no warm capacity)`,
    });
    return this.#record(started, a, ctx, false);
  }

  /**
   * A warm delivery is the success path of every claim: a line per claim at info would be the
   * bulk of the log at a burst's rate, and the claim's Bound condition says the same. It is at
   * debug; a cold start (seconds, rare) stays at info.
   */
  #delivered(key: string, a: Assignment, ctx: ReconcileContext, what: string, level: 'debug' | 'info' = 'debug'): void {
    this.#capacityMisses.delete(key);
    this.#unrecorded.set(key, a);
    ctx.log[level]({ node: a.node, sandboxId: a.claimId }, what);
  }

  /**
   * Writes the Bound record of a delivery. A failure keeps the delivery in #unrecorded (so no
   * second VM is ever claimed for the claim), says on the claim what failed and retries with
   * backoff; a claim that is gone meanwhile gets its VM released.
   */
  async #record(claim: SandboxClaim, a: Assignment, ctx: ReconcileContext, adopted: boolean): Promise<ReconcileResult | void> {
    const namespace = claim.metadata.namespace ?? '';
    const name = claim.metadata.name ?? '';
    const key = `${namespace}/${name}`;
    let bound: SandboxClaim;
    try {
      bound = await this.#recordOnto(claim, a, ctx, adopted);
    } catch (err) {
      if (isNotFound(err)) return this.#gone({ namespace, name }, ctx);
      // A refused Secret write means the cached access answer is stale (RBAC changed since).
      if (isForbidden(err)) this.o.secretAccess.forget(namespace);
      const failures = this.#recordFailures.get(key) ?? 0;
      this.#recordFailures.set(key, failures + 1);
      ctx.log.warn(
        { err, node: a.node, sandboxId: a.claimId, attempt: failures + 1 },
        'bound record failed; the delivery is kept and recorded later',
      );
      const problem = recordFailure(err, a, namespace);
      // The status write may fail for the same reason (the API server away): the retry still comes.
      await this.#pendingCondition(claim, CLAIM_REASONS.recordFailed, problem, false).catch((condErr: unknown) =>
        ctx.log.warn({ err: condErr }, 'could not write the RecordFailed condition'),
      );
      return { requeueAfterMs: backoffDelayMs(failures, { baseMs: 1000, maxMs: 30_000, jitter: 0.2 }) };
    }
    this.#forget(key);
    if (bound !== claim) this.#bound.set(key, bound);
    // the lease renewal (or expiry) is scheduled now: the status write's own watch event does not reconcile again
    return this.#whileBound(bound, ctx);
  }

  /**
   * The record onto the claim as decided on; a claim that changed since (409 on the
   * resourceVersion-conditional status write) is read live once and the record tried on that.
   */
  async #recordOnto(claim: SandboxClaim, a: Assignment, ctx: ReconcileContext, adopted: boolean): Promise<SandboxClaim> {
    const target = { namespace: claim.metadata.namespace ?? '', name: claim.metadata.name ?? '', uid: claim.metadata.uid ?? '' };
    const opts = { adopted, secretFirst: (this.#recordFailures.get(`${target.namespace}/${target.name}`) ?? 0) > 0 };
    try {
      return await this.o.recorder.recordBoundOn(claim, target, a, ctx.signal, opts);
    } catch (err) {
      if (!isConflict(err)) throw err;
    }
    const live = await this.o.claimClient.get(target.namespace, target.name, ctx.signal);
    return this.o.recorder.recordBoundOn(live, target, a, ctx.signal, opts);
  }

  #forget(key: string): void {
    this.#unrecorded.delete(key);
    this.#recordFailures.delete(key);
  }

  /**
   * The claim object is gone (deleted without our finalizer, e.g. stripped by hand): a delivery
   * made for it and not yet recorded would be held by nobody, so it goes back to the node.
   */
  async #gone(req: ReconcileRequest, ctx: ReconcileContext): Promise<void> {
    const key = `${req.namespace}/${req.name}`;
    const pending = this.#unrecorded.get(key);
    this.#bound.delete(key);
    this.#capacityMisses.delete(key);
    this.#recordFailures.delete(key);
    if (!pending) return;
    try {
      await this.o.claimClient.get(req.namespace, req.name, ctx.signal);
      return; // the cache lags a re-created claim; the next pass records the delivery for it
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    await this.o.gateway.release({ node: pending.node, claimId: pending.claimId, address: pending.address }, ctx.signal);
    this.#unrecorded.delete(key);
    ctx.log.info({ node: pending.node, sandboxId: pending.claimId }, 'claim gone before its record; delivered sandbox released');
  }

  /** Bound=False/Ready=False NamespaceNotEnabled; asked again after a modest delay, never in a hot loop. */
  async #namespaceNotEnabled(claim: SandboxClaim, access: SecretAccessDecision): Promise<ReconcileResult> {
    const problem = {
      field: 'metadata.namespace',
      message: `${namespaceNotEnabledMessage(claim.metadata.namespace ?? '', access)}; the claim binds by itself once the namespace is allowed`,
    };
    await this.#pendingCondition(claim, CLAIM_REASONS.namespaceNotEnabled, problem, false);
    return { requeueAfterMs: this.o.namespaceRecheckMs ?? DEFAULT_NAMESPACE_RECHECK_MS };
  }

  /**
   * After a restart or a failover, a claim older than this leadership may already hold a VM on
   * some node, delivered by an earlier leader that did not record it: its hinted node first, then
   * one shared listing per node (EarlierDeliveries), never one request per claim and node.
   */
  async #earlierDelivery(claim: SandboxClaim, ctx: ReconcileContext): Promise<Assignment | undefined> {
    const since = this.o.leadingSince();
    if (since !== undefined && !createdBefore(claim, since)) return undefined;
    const hint = claim.metadata.annotations?.[ANNOTATIONS.deliveryNode];
    const claimRef = this.o.gateway.claimRefOf({
      ...claimOwner(claim),
      namespace: claim.metadata.namespace ?? '',
      name: claim.metadata.name ?? '',
    });
    const found = await this.o.earlier.find({ claimRef, leadingSince: since, ...(hint ? { hint } : {}) }, ctx.signal);
    if (found) ctx.log.info({ node: found.node, sandboxId: found.claimId }, 'adopting a delivery made before this leadership');
    return found;
  }

  #resolve(
    claim: SandboxClaim,
  ): { key: PoolKey; ttlSeconds: number; coldStart: ColdStartPolicy } | { reason: string; problem: FieldProblem; retry: boolean } {
    const ns = claim.metadata.namespace ?? '';
    const poolName = claim.spec.warmPoolRef.name;
    const pool = this.o.pools.get(ns, poolName);
    if (!pool)
      return {
        reason: CONDITION_REASONS.warmPoolNotFound,
        problem: { field: 'spec.warmPoolRef.name', message: `SandboxWarmPool "${poolName}" not found in namespace ${ns}` },
        retry: true,
      };
    const tplName = pool.spec.sandboxTemplateRef.name;
    const template = this.o.templates.get(ns, tplName);
    if (!template)
      return {
        reason: CONDITION_REASONS.templateNotFound,
        problem: { field: 'spec.warmPoolRef.name', message: `SandboxTemplate "${tplName}" of pool "${poolName}" not found` },
        retry: true,
      };
    const ttl = claimTtl(claim, this.#now());
    if (!ttl.ok) return { reason: CLAIM_REASONS.invalidSpec, problem: ttl.problem, retry: false };
    // Before any VM is claimed: a value asking for what a microVM does not do is refused, never dropped.
    const [own] = refusedClaimFields(claim.spec, template.spec);
    if (own) return { reason: own.reason, problem: { field: own.field, message: own.message }, retry: false };
    // the template may be fixed without the claim changing: asked again as for a missing template
    const [inherited] = refusedTemplateFields(template.spec);
    if (inherited)
      return {
        reason: inherited.reason,
        problem: {
          field: 'spec.warmPoolRef.name',
          message: `SandboxTemplate "${tplName}" of pool "${poolName}": ${inherited.field}: ${inherited.message}`,
        },
        retry: true,
      };
    return { key: poolKeyForTemplate(template), ttlSeconds: ttl.ttlSeconds, coldStart: pool.spec.coldStart };
  }

  async #claimFailed(claim: SandboxClaim, err: unknown): Promise<ReconcileResult> {
    const key = `${claim.metadata.namespace}/${claim.metadata.name}`;
    if (isNoWarmCapacity(err)) {
      const misses = this.#capacityMisses.get(key) ?? 0;
      this.#capacityMisses.set(key, misses + 1);
      await this.#pendingCondition(
        claim,
        CONDITION_REASONS.noWarmCapacity,
        { field: 'spec.warmPoolRef.name', message: err instanceof Error ? err.message : String(err) },
        false,
      );
      return { requeueAfterMs: backoffDelayMs(misses, { baseMs: 1000, maxMs: 30_000, jitter: 0.2 }) };
    }
    if (isClaimRoutingNotConfigured(err)) {
      await this.#pendingCondition(
        claim,
        CLAIM_REASONS.routingNotConfigured,
        { field: '--fleet-token-file', message: 'no sandboxd fleet token configured; claims are refused' },
        false,
      );
      return { requeueAfterMs: WAIT_FOR_CONFIG_MS };
    }
    this.#event(claim, {
      type: 'Warning',
      reason: CLAIM_REASONS.claimFailed,
      action: 'Claim',
      note: err instanceof Error ? err.message : String(err),
    });
    throw err;
  }

  /** Bound=False and Ready=False with a reason naming the field; an event only when the reason changes. */
  async #pendingCondition(claim: SandboxClaim, reason: string, problem: FieldProblem, retry: boolean): Promise<ReconcileResult> {
    const message = `${problem.field}: ${problem.message}`;
    const prev = claim.status?.conditions?.find((c) => c.type === CONDITION_TYPES.bound);
    if (prev?.reason !== reason || prev.message !== message) {
      const pending = { status: 'False' as const, reason, message };
      await this.o.claimClient.setCondition(claim, { type: CONDITION_TYPES.bound, ...pending }, this.#now(), [
        { type: CONDITION_TYPES.ready, ...pending },
      ]);
      if (prev?.reason !== reason) this.#event(claim, { type: 'Warning', reason, action: 'Claim', note: message });
    }
    return retry ? { requeueAfterMs: WAIT_FOR_CONFIG_MS } : {};
  }

  /**
   * A Bound claim lives until it is deleted or until spec.lifecycle.shutdownTime: the node lease
   * is renewed before it runs out (bounded in rate, spread per claim), the sandbox is released at
   * shutdownTime, and a claim whose sandbox is gone from its node says so.
   */
  async #whileBound(claim: SandboxClaim, ctx: ReconcileContext): Promise<ReconcileResult | void> {
    const key = `${claim.metadata.namespace}/${claim.metadata.name}`;
    if (FINISHED_REASONS.has(boundCondition(claim)?.reason ?? '')) {
      this.#leases.delete(key);
      return this.#afterFinished(claim);
    }
    const lease = currentLease(claim, this.#leases.get(key), this.o.rng);
    const step = nextLeaseStep(claim, lease, this.#now().getTime(), {
      leaseTtlSeconds: this.o.leaseTtlSeconds ?? 0,
      ...(this.o.rng ? { rng: this.o.rng } : {}),
    });
    // A renewal asks the node anyway; otherwise one read settles what the inventory suggested.
    const suspect = this.o.presence?.takeSuspect(key, boundClaimId(claim)) ?? false;
    if (suspect && (step.kind === 'wait' || step.kind === 'none') && !(await this.#stillOnNode(claim, ctx))) return this.#lost(claim, key);
    switch (step.kind) {
      case 'none':
        return;
      case 'wait':
        return { requeueAfterMs: Math.min(Math.max(1, Math.ceil(step.ms)), 2 ** 31 - 1) };
      case 'expire':
        return this.#expire(claim, step.at);
      case 'renew':
        return this.#renew(claim, key, step.ttlSeconds, ctx);
    }
  }

  async #renew(claim: SandboxClaim, key: string, ttlSeconds: number, ctx: ReconcileContext): Promise<ReconcileResult | void> {
    const waitMs = this.o.renewals?.take() ?? 0;
    if (waitMs > 0) {
      this.o.onRenewal?.('deferred');
      // spread the claims that were refused together over the next few tokens
      return { requeueAfterMs: waitMs + Math.floor((this.o.rng ?? Math.random)() * 1000) };
    }
    const sb = claim.status?.sandbox ?? {};
    const target = { node: sb.nodeName ?? '', claimId: boundClaimId(claim), ...(sb.address ? { address: sb.address } : {}) };
    const now = this.#now().getTime();
    let deadline: Date | undefined;
    try {
      deadline = await this.o.gateway.renew(target, ttlSeconds, ctx.signal);
    } catch (err) {
      if (isSandboxGone(err)) {
        this.o.onRenewal?.('lost');
        return this.#lost(claim, key);
      }
      return this.#renewFailed(claim, key, err, ctx);
    }
    this.o.onRenewal?.('renewed');
    this.#renewFailures.delete(key);
    if (deadline === undefined) {
      this.#leases.delete(key);
      return this.#whileBoundAfterRenew(claim, undefined);
    }
    const lease = { claimId: target.claimId, deadlineMs: deadline.getTime(), renewAtMs: renewAtMs(now, deadline.getTime(), this.o.rng) };
    this.#leases.set(key, lease);
    return this.#whileBoundAfterRenew(claim, lease);
  }

  /**
   * Whether the claim's node still has its sandbox. Only the node's 404 says no: a node that does
   * not answer leaves the claim as it is (the lease renewal asks again before the lease runs out).
   */
  async #stillOnNode(claim: SandboxClaim, ctx: ReconcileContext): Promise<boolean> {
    const sb = claim.status?.sandbox ?? {};
    const target = { node: sb.nodeName ?? '', claimId: boundClaimId(claim), ...(sb.address ? { address: sb.address } : {}) };
    try {
      return await this.o.gateway.holds(target, ctx.signal);
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      ctx.log.info(
        { node: target.node, sandboxId: target.claimId, err: why },
        'could not ask the node for a sandbox its inventory no longer lists',
      );
      return true;
    }
  }

  #whileBoundAfterRenew(claim: SandboxClaim, lease: NodeLease | undefined): ReconcileResult | void {
    const step = nextLeaseStep(claim, lease, this.#now().getTime(), { leaseTtlSeconds: this.o.leaseTtlSeconds ?? 0 });
    if (step.kind === 'wait') return { requeueAfterMs: Math.min(Math.max(1, Math.ceil(step.ms)), 2 ** 31 - 1) };
    // a lease shorter than the time the call took: look again at once rather than spin here
    if (step.kind === 'renew' || step.kind === 'expire') return { requeueAfterMs: 1 };
  }

  /**
   * A renewal that did not reach the node (timeout, 5xx, archived, unknown address): retried with
   * backoff, always before the current deadline. Warned once per streak, not per try.
   */
  #renewFailed(claim: SandboxClaim, key: string, err: unknown, ctx: ReconcileContext): ReconcileResult {
    this.o.onRenewal?.('error');
    const failures = this.#renewFailures.get(key) ?? 0;
    this.#renewFailures.set(key, failures + 1);
    const status = asSandboxdHttpError(err)?.statusCode;
    const why = err instanceof Error ? err.message : String(err);
    ctx.log.warn(
      { node: claim.status?.sandbox?.nodeName, sandboxId: boundClaimId(claim), status, err: why },
      'node lease renewal failed; retrying',
    );
    if (failures === 0) {
      this.#event(claim, {
        type: 'Warning',
        reason: CLAIM_REASONS.leaseRenewFailed,
        action: 'Renew',
        note: `renewing the lease of sandbox ${boundClaimId(claim)} on node ${claim.status?.sandbox?.nodeName} failed${status ? ` (sandboxd ${status})` : ''}; retrying`,
      });
    }
    const deadlineMs = currentLease(claim, this.#leases.get(key), this.o.rng)?.deadlineMs;
    const backoff = backoffDelayMs(failures, { baseMs: 1000, maxMs: 30_000, jitter: 0.2, ...(this.o.rng ? { rng: this.o.rng } : {}) });
    // keep a few tries before the deadline even when the backoff has grown
    const left = deadlineMs === undefined ? backoff : Math.max(250, (deadlineMs - this.#now().getTime()) / 4);
    return { requeueAfterMs: Math.ceil(Math.min(backoff, left)) };
  }

  /** spec.lifecycle.shutdownTime has come: release, say so, then the claim's shutdownPolicy. */
  async #expire(claim: SandboxClaim, at: Date): Promise<ReconcileResult | void> {
    await this.#release(claim);
    const message = `the claim expired at ${at.toISOString()}; sandbox ${boundClaimId(claim)} released`;
    return this.#finish(claim, CONDITION_REASONS.claimExpired, message, 'Normal', 'Release');
  }

  /** The node no longer has the sandbox: nothing to release; the claim says what happened. */
  async #lost(claim: SandboxClaim, key: string): Promise<ReconcileResult | void> {
    this.#leases.delete(key);
    this.#renewFailures.delete(key);
    const sb = claim.status?.sandbox ?? {};
    const message = `sandbox ${boundClaimId(claim)} is gone from node ${sb.nodeName} (its node lease ran out or the node lost it); delete the claim or create a new one`;
    return this.#finish(claim, CLAIM_REASONS.sandboxLost, message, 'Warning', 'Renew');
  }

  /** Bound=False, Ready=False and Finished=True with one reason; one event; then the claim's own end. */
  async #finish(
    claim: SandboxClaim,
    reason: string,
    message: string,
    type: 'Normal' | 'Warning',
    action: string,
  ): Promise<ReconcileResult | void> {
    const key = `${claim.metadata.namespace}/${claim.metadata.name}`;
    this.#leases.delete(key);
    const ended = { status: 'False' as const, reason, message };
    await this.o.claimClient.setCondition(claim, { type: CONDITION_TYPES.bound, ...ended }, this.#now(), [
      { type: CONDITION_TYPES.ready, ...ended },
      { type: CONDITION_TYPES.finished, status: 'True', reason, message },
    ]);
    this.#event(claim, { type, reason, action, note: message });
    return this.#afterFinished(claim, this.#now());
  }

  /**
   * The claim object after its sandbox is gone: shutdownPolicy Delete removes it now;
   * ttlSecondsAfterFinished removes it that long after it finished; Retain keeps it.
   */
  async #afterFinished(claim: SandboxClaim, finishedAt?: Date): Promise<ReconcileResult | void> {
    const lifecycle = claim.spec.lifecycle;
    if (lifecycle?.shutdownPolicy === 'Delete' || lifecycle?.shutdownPolicy === 'DeleteForeground') return this.#deleteClaim(claim);
    const ttl = lifecycle?.ttlSecondsAfterFinished;
    if (ttl === undefined) return;
    const finished = claim.status?.conditions?.find((c) => c.type === CONDITION_TYPES.finished && c.status === 'True');
    const sinceMs =
      finishedAt?.getTime() ??
      parseTime(finished?.lastTransitionTime) ??
      parseTime(boundCondition(claim)?.lastTransitionTime) ??
      this.#now().getTime();
    const waitMs = sinceMs + ttl * 1000 - this.#now().getTime();
    if (waitMs > 0) return { requeueAfterMs: Math.min(Math.ceil(waitMs), 2 ** 31 - 1) };
    return this.#deleteClaim(claim);
  }

  async #deleteClaim(claim: SandboxClaim): Promise<void> {
    try {
      await this.o.claimClient.delete(claim);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  async #finalize(claim: SandboxClaim, ctx: ReconcileContext): Promise<void> {
    if (!hasFinalizer(claim)) return;
    const key = `${claim.metadata.namespace}/${claim.metadata.name}`;
    const pending = this.#unrecorded.get(key);
    if (pending) await this.o.gateway.release({ node: pending.node, claimId: pending.claimId, address: pending.address }, ctx.signal);
    else if (recordsSandbox(claim) && !FINISHED_REASONS.has(boundCondition(claim)?.reason ?? '')) await this.#release(claim);
    this.#unrecorded.delete(key);
    this.#capacityMisses.delete(key);
    this.#leases.delete(key);
    this.#renewFailures.delete(key);
    this.#recordFailures.delete(key);
    this.#bound.delete(key);
    try {
      await this.o.claimClient.removeFinalizer(claim);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  async #release(claim: SandboxClaim): Promise<void> {
    const sb = claim.status?.sandbox ?? {};
    await this.o.gateway.release({ node: sb.nodeName ?? '', claimId: boundClaimId(claim), ...(sb.address ? { address: sb.address } : {}) });
    this.#event(claim, {
      type: 'Normal',
      reason: CLAIM_REASONS.released,
      action: 'Release',
      note: `sandbox ${boundClaimId(claim)} released on node ${sb.nodeName}`,
    });
  }

  #event(claim: SandboxClaim, ev: EventInput): void {
    this.o.events.record(involvedObjectOf(claim), ev);
  }

  #now(): Date {
    return (this.o.now ?? (() => new Date()))();
  }
}

function boundCondition(claim: SandboxClaim) {
  return claim.status?.conditions?.find((c) => c.type === CONDITION_TYPES.bound);
}
