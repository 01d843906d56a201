import {
  type EventInput,
  type EventRecorder,
  type Informer,
  involvedObjectOf,
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
  poolKeyForTemplate,
  type ColdStartPolicy,
  type PoolKey,
  type SandboxClaim,
  type SandboxTemplate,
  type SandboxWarmPool,
} from '@sandbox-scale/scale-core';
import type { Assignment } from '../gateway/assignment';
import type { ClaimGateway } from '../gateway/claim-gateway';
import type { ClaimRecorder } from '../gateway/claim-recorder';
import { isBound } from '../gateway/claim-status';
import { namespaceNotEnabledMessage, type SecretAccess, type SecretAccessDecision } from '../gateway/secret-access';
import { recordFailure } from './record-failure';
import { claimTtl, createdBefore, expiryOf, type FieldProblem } from './claim-lifecycle';
import { hasFinalizer, type ClaimWrites } from './claim-writes';

export const CLAIM_REASONS = {
  invalidSpec: 'InvalidSpec',
  routingNotConfigured: 'ClaimRoutingNotConfigured',
  released: 'Released',
  claimFailed: 'ClaimFailed',
  /** Bound=False while a node boots a VM for the claim (pool coldStart WhenNoWarmCapacity); also the events of a cold start. */
  coldStart: 'ColdStart',
  /** Bound=False before any VM is claimed: RBAC does not let claim-controller write the claim's Secret in its namespace. */
  namespaceNotEnabled: 'NamespaceNotEnabled',
  /** Bound=False after a node delivered: the Bound record (token Secret or status) could not be written; the VM is kept. */
  recordFailed: 'RecordFailed',
} as const;
const WAIT_FOR_CONFIG_MS = 30_000;
const FAST_PATH_GRACE_MS = 2_000;
/**
 * How often a claim refused for its namespace asks again. RBAC changes send no event this
 * controller can watch (it may not read RoleBindings), so a refused claim polls at this modest
 * pace; the access cache holds a refusal for less than this, so each recheck is a fresh review.
 */
export const DEFAULT_NAMESPACE_RECHECK_MS = 20_000;

export interface ClaimReconcilerOptions {
  claims: Informer<SandboxClaim>;
  pools: Informer<SandboxWarmPool>;
  templates: Informer<SandboxTemplate>;
  gateway: ClaimGateway;
  recorder: ClaimRecorder;
  writes: ClaimWrites;
  events: EventRecorder;
  /** Whether claim Secrets may be written in a namespace; asked before any VM is claimed. */
  secretAccess: Pick<SecretAccess, 'check' | 'forget'>;
  /** Requeue of a claim refused for its namespace. Default DEFAULT_NAMESPACE_RECHECK_MS. */
  namespaceRecheckMs?: number;
  /** Claims created before this may have been delivered by an earlier process. */
  startedAt: Date;
  now?: () => Date;
}

/**
 * SandboxClaim -> a node-local claim -> the Bound record; delete or expiry -> release on the
 * node -> the finalizer goes. Level-based: every pass reads the claim afresh, and a claim is
 * never claimed twice (status, a live re-read, the node's own list after a restart, and the
 * deliveries this process made but could not record yet).
 */
export class ClaimReconciler implements Reconciler {
  readonly #undelivered = new Map<string, Assignment>();
  readonly #capacityMisses = new Map<string, number>();
  readonly #recordFailures = new Map<string, number>();
  constructor(private readonly o: ClaimReconcilerOptions) {}

  async reconcile(req: ReconcileRequest, ctx: ReconcileContext): Promise<ReconcileResult | void> {
    const claim = this.o.claims.get(req.namespace, req.name);
    if (claim === undefined) return this.#gone(req, ctx);
    if (claim.metadata.deletionTimestamp) return this.#finalize(claim, ctx);
    // The finalizer goes on before any VM is claimed, so a delete can never skip the release.
    if (!hasFinalizer(claim)) await this.o.writes.addFinalizer(claim);
    if (isBound(claim)) return this.#whileBound(claim);
    if (claim.metadata.annotations?.[ANNOTATIONS.claimId]) return { requeueAfterMs: FAST_PATH_GRACE_MS };
    return this.#bind(req, ctx);
  }

  async #bind(req: ReconcileRequest, ctx: ReconcileContext): Promise<ReconcileResult | void> {
    const key = `${req.namespace}/${req.name}`;
    // The cache may not have our own Bound write yet: decide on a live read.
    let claim: SandboxClaim;
    try {
      claim = await this.o.writes.get(req.namespace, req.name, ctx.signal);
    } catch (err) {
      if (isNotFound(err)) return this.#gone(req, ctx);
      throw err;
    }
    if (isBound(claim) || claim.metadata.deletionTimestamp) {
      // recorded meanwhile by another writer (the orphan pass): nothing of this delivery is left to do
      if (isBound(claim)) this.#forget(key);
      return;
    }
    const pending = this.#undelivered.get(key) ?? (await this.#previousDelivery(claim, ctx));
    if (pending) return this.#record(claim, pending, ctx, true);
    const resolved = this.#resolve(claim);
    if ('problem' in resolved) return this.#pendingCondition(claim, resolved.reason, resolved.problem, resolved.retry);
    // Before a VM is spent: a claim whose token Secret could not be written would hold it for nothing.
    const access = await this.o.secretAccess.check(req.namespace);
    if (!access.allowed) return this.#namespaceNotEnabled(claim, access);
    const gwReq = { namespace: req.namespace, name: req.name, key: resolved.key, ttlSeconds: resolved.ttlSeconds, signal: ctx.signal };
    let a: Assignment;
    try {
      a = await this.o.gateway.deliver(gwReq);
    } catch (err) {
      if (!(isNoWarmCapacity(err) && resolved.coldStart === 'WhenNoWarmCapacity')) return this.#claimFailed(claim, err);
      return this.#coldStart(claim, gwReq, ctx);
    }
    this.#delivered(key, a, ctx, 'node delivered a sandbox');
    return this.#record(claim, a, ctx, false);
  }

  /**
   * No node has a warm VM of the key and the pool allows a cold claim: say so first (the boot
   * takes seconds and the claimant should see why it waits), then claim cold. When every
   * routable node refuses (429), it is NoWarmCapacity with backoff, as for a pool that never
   * cold-starts; the inventory watch wakes the claim when warm capacity appears.
   */
  async #coldStart(claim: SandboxClaim, req: Parameters<ClaimGateway['coldDeliver']>[0], ctx: ReconcileContext): Promise<ReconcileResult | void> {
    const key = `${req.namespace}/${req.name}`;
    const message = `spec.warmPoolRef.name: no node has a warm sandbox of ${req.key.template}; cold-starting one on a routable node (the pool allows coldStart WhenNoWarmCapacity)`;
    const starting = { status: 'False' as const, reason: CLAIM_REASONS.coldStart, message };
    await this.o.writes.setCondition(claim, { type: CONDITION_TYPES.bound, ...starting }, this.#now(), [{ type: CONDITION_TYPES.ready, ...starting }]);
    this.#event(claim, { type: 'Normal', reason: CLAIM_REASONS.coldStart, action: 'Claim', note: message });
    const t0 = performance.now();
    let a: Assignment;
    try {
      a = await this.o.gateway.coldDeliver(req);
    } catch (err) {
      // Decide the next condition against what is stored now (ColdStart), not the stale read.
      const current = await this.o.writes.get(req.namespace, req.name, ctx.signal).catch(() => claim);
      return this.#claimFailed(current, err);
    }
    this.#delivered(key, a, ctx, 'node cold-started a sandbox');
    const ms = Math.round(performance.now() - t0);
    this.#event(claim, { type: 'Normal', reason: CLAIM_REASONS.coldStart, action: 'Bind', note: `node ${a.node} cold-started sandbox ${a.claimId} in ${ms} ms (no warm capacity)` });
    return this.#record(claim, a, ctx, false);
  }

  #delivered(key: string, a: Assignment, ctx: ReconcileContext, what: string): void {
    this.#capacityMisses.delete(key);
    this.#undelivered.set(key, a);
    ctx.log.info({ node: a.node, sandboxId: a.claimId }, what);
  }

  /**
   * Writes the Bound record of a delivery. A failure keeps the delivery in #undelivered (so no
   * second VM is ever claimed for the claim), says on the claim what failed and retries with
   * backoff; a claim that is gone meanwhile gets its VM released.
   */
  async #record(claim: SandboxClaim, a: Assignment, ctx: ReconcileContext, adopted: boolean): Promise<ReconcileResult | void> {
    const namespace = claim.metadata.namespace ?? '';
    const name = claim.metadata.name ?? '';
    const key = `${namespace}/${name}`;
    try {
      await this.o.recorder.recordBound({ namespace, name }, a, ctx.signal, adopted);
    } catch (err) {
      if (isNotFound(err)) return this.#gone({ namespace, name }, ctx);
      // A refused Secret write means the cached access answer is stale (RBAC changed since).
      if (isForbidden(err)) this.o.secretAccess.forget(namespace);
      const failures = this.#recordFailures.get(key) ?? 0;
      this.#recordFailures.set(key, failures + 1);
      ctx.log.warn({ err, node: a.node, sandboxId: a.claimId, attempt: failures + 1 }, 'bound record failed; the delivery is kept and recorded later');
      const problem = recordFailure(err, a, namespace);
      // The status write may fail for the same reason (the API server away): the retry still comes.
      await this.#pendingCondition(claim, CLAIM_REASONS.recordFailed, problem, false).catch((condErr: unknown) => ctx.log.warn({ err: condErr }, 'could not write the RecordFailed condition'));
      return { requeueAfterMs: backoffDelayMs(failures, { baseMs: 1000, maxMs: 30_000, jitter: 0.2 }) };
    }
    this.#forget(key);
  }

  #forget(key: string): void {
    this.#undelivered.delete(key);
    this.#recordFailures.delete(key);
  }

  /**
   * The claim object is gone (deleted without our finalizer, e.g. stripped by hand): a delivery
   * made for it and not yet recorded would be held by nobody, so it goes back to the node.
   */
  async #gone(req: ReconcileRequest, ctx: ReconcileContext): Promise<void> {
    const key = `${req.namespace}/${req.name}`;
    const pending = this.#undelivered.get(key);
    this.#capacityMisses.delete(key);
    this.#recordFailures.delete(key);
    if (!pending) return;
    try {
      await this.o.writes.get(req.namespace, req.name, ctx.signal);
      return; // the cache lags a re-created claim; the next pass records the delivery for it
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    await this.o.gateway.release({ node: pending.node, claimId: pending.claimId, address: pending.address }, ctx.signal);
    this.#undelivered.delete(key);
    ctx.log.info({ node: pending.node, sandboxId: pending.claimId }, 'claim gone before its record; delivered sandbox released');
  }

  /** Bound=False/Ready=False NamespaceNotEnabled; asked again after a modest delay, never in a hot loop. */
  async #namespaceNotEnabled(claim: SandboxClaim, access: SecretAccessDecision): Promise<ReconcileResult> {
    const problem = { field: 'metadata.namespace', message: `${namespaceNotEnabledMessage(claim.metadata.namespace ?? '', access)}; the claim binds by itself once the namespace is allowed` };
    await this.#pendingCondition(claim, CLAIM_REASONS.namespaceNotEnabled, problem, false);
    return { requeueAfterMs: this.o.namespaceRecheckMs ?? DEFAULT_NAMESPACE_RECHECK_MS };
  }

  /** After a restart, a claim older than this process may already hold a VM on some node. */
  async #previousDelivery(claim: SandboxClaim, ctx: ReconcileContext): Promise<Assignment | undefined> {
    if (!createdBefore(claim, this.o.startedAt)) return undefined;
    const found = await this.o.gateway.findDeliveries({ namespace: claim.metadata.namespace ?? '', name: claim.metadata.name ?? '' }, ctx.signal);
    if (found.length > 0) ctx.log.info({ node: found[0]?.node, sandboxId: found[0]?.claimId }, 'adopting a delivery made before a restart');
    return found[0];
  }

  #resolve(claim: SandboxClaim): { key: PoolKey; ttlSeconds: number; coldStart: ColdStartPolicy } | { reason: string; problem: FieldProblem; retry: boolean } {
    const ns = claim.metadata.namespace ?? '';
    const poolName = claim.spec.warmPoolRef.name;
    const pool = this.o.pools.get(ns, poolName);
    if (!pool) return { reason: CONDITION_REASONS.warmPoolNotFound, problem: { field: 'spec.warmPoolRef.name', message: `SandboxWarmPool "${poolName}" not found in namespace ${ns}` }, retry: true };
    const tplName = pool.spec.sandboxTemplateRef.name;
    const template = this.o.templates.get(ns, tplName);
    if (!template) return { reason: CONDITION_REASONS.templateNotFound, problem: { field: 'spec.warmPoolRef.name', message: `SandboxTemplate "${tplName}" of pool "${poolName}" not found` }, retry: true };
    const ttl = claimTtl(claim, this.#now());
    if (!ttl.ok) return { reason: CLAIM_REASONS.invalidSpec, problem: ttl.problem, retry: false };
    return { key: poolKeyForTemplate(template), ttlSeconds: ttl.ttlSeconds, coldStart: pool.spec.coldStart };
  }

  async #claimFailed(claim: SandboxClaim, err: unknown): Promise<ReconcileResult> {
    const key = `${claim.metadata.namespace}/${claim.metadata.name}`;
    if (isNoWarmCapacity(err)) {
      const misses = this.#capacityMisses.get(key) ?? 0;
      this.#capacityMisses.set(key, misses + 1);
      await this.#pendingCondition(claim, CONDITION_REASONS.noWarmCapacity, { field: 'spec.warmPoolRef.name', message: err instanceof Error ? err.message : String(err) }, false);
      return { requeueAfterMs: backoffDelayMs(misses, { baseMs: 1000, maxMs: 30_000, jitter: 0.2 }) };
    }
    if (isClaimRoutingNotConfigured(err)) {
      await this.#pendingCondition(claim, CLAIM_REASONS.routingNotConfigured, { field: '--fleet-token-file', message: 'no sandboxd fleet token configured; claims are refused' }, false);
      return { requeueAfterMs: WAIT_FOR_CONFIG_MS };
    }
    this.#event(claim, { type: 'Warning', reason: CLAIM_REASONS.claimFailed, action: 'Claim', note: err instanceof Error ? err.message : String(err) });
    throw err;
  }

  /** Bound=False and Ready=False with a reason naming the field; an event only when the reason changes. */
  async #pendingCondition(claim: SandboxClaim, reason: string, problem: FieldProblem, retry: boolean): Promise<ReconcileResult> {
    const message = `${problem.field}: ${problem.message}`;
    const prev = claim.status?.conditions?.find((c) => c.type === CONDITION_TYPES.bound);
    if (prev?.reason !== reason || prev.message !== message) {
      const pending = { status: 'False' as const, reason, message };
      await this.o.writes.setCondition(claim, { type: CONDITION_TYPES.bound, ...pending }, this.#now(), [{ type: CONDITION_TYPES.ready, ...pending }]);
      if (prev?.reason !== reason) this.#event(claim, { type: 'Warning', reason, action: 'Claim', note: message });
    }
    return retry ? { requeueAfterMs: WAIT_FOR_CONFIG_MS } : {};
  }

  async #whileBound(claim: SandboxClaim): Promise<ReconcileResult | void> {
    const bound = claim.status?.conditions?.find((c) => c.type === CONDITION_TYPES.bound);
    if (bound?.reason === CONDITION_REASONS.claimExpired) return;
    const expiry = expiryOf(claim);
    if (expiry === undefined) return;
    const waitMs = expiry.getTime() - this.#now().getTime();
    if (waitMs > 0) return { requeueAfterMs: Math.min(waitMs, 2 ** 31 - 1) };
    await this.#release(claim);
    const message = `the claim expired at ${expiry.toISOString()}; sandbox ${claim.status?.sandbox?.name} released`;
    const expired = { status: 'False' as const, reason: CONDITION_REASONS.claimExpired, message };
    await this.o.writes.setCondition(claim, { type: CONDITION_TYPES.bound, ...expired }, this.#now(), [{ type: CONDITION_TYPES.ready, ...expired }]);
    this.#event(claim, { type: 'Normal', reason: CONDITION_REASONS.claimExpired, action: 'Release', note: message });
    if (claim.spec.lifecycle?.shutdownPolicy === 'Delete' || claim.spec.lifecycle?.shutdownPolicy === 'DeleteForeground') await this.o.writes.delete(claim);
  }

  async #finalize(claim: SandboxClaim, ctx: ReconcileContext): Promise<void> {
    if (!hasFinalizer(claim)) return;
    const key = `${claim.metadata.namespace}/${claim.metadata.name}`;
    const bound = claim.status?.conditions?.find((c) => c.type === CONDITION_TYPES.bound);
    const pending = this.#undelivered.get(key);
    if (pending) await this.o.gateway.release({ node: pending.node, claimId: pending.claimId, address: pending.address }, ctx.signal);
    else if (isBound(claim) && bound?.reason !== CONDITION_REASONS.claimExpired) await this.#release(claim);
    this.#undelivered.delete(key);
    this.#capacityMisses.delete(key);
    this.#recordFailures.delete(key);
    try {
      await this.o.writes.removeFinalizer(claim);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  async #release(claim: SandboxClaim): Promise<void> {
    const sb = claim.status?.sandbox ?? {};
    await this.o.gateway.release({ node: sb.nodeName ?? '', claimId: sb.name ?? '', ...(sb.address ? { address: sb.address } : {}) });
    this.#event(claim, { type: 'Normal', reason: CLAIM_REASONS.released, action: 'Release', note: `sandbox ${sb.name} released on node ${sb.nodeName}` });
  }

  #event(claim: SandboxClaim, ev: EventInput): void {
    this.o.events.record(involvedObjectOf(claim), ev);
  }

  #now(): Date {
    return (this.o.now ?? (() => new Date()))();
  }
}
