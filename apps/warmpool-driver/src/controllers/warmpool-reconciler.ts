import type { KubeConfig } from '@kubernetes/client-node';
import {
  applyStatus,
  involvedObjectOf,
  type EventRecorder,
  type Informer,
  type Logger,
  type ReconcileContext,
  type ReconcileRequest,
  type ReconcileResult,
  type Reconciler,
} from '@sandbox-scale/kube-runtime';
import {
  CONDITION_REASONS,
  FIELD_MANAGERS,
  ignoredPodTemplateFields,
  ignoredPodTemplateMessage,
  normalizePoolKey,
  poolKeyForTemplate,
  poolKeyId,
  refusedTemplateFields,
  type NodeInventory,
  type PoolKey,
  type PoolKeyLike,
  type SandboxTemplate,
  type SandboxWarmPool,
  type SandboxWarmPoolStatus,
} from '@sandbox-scale/scale-core';
import { planTargets, type NodePoolSpec, type SpreadPool } from '../targets/plan-targets';
import { needsRepush } from '../targets/node-drift';
import { allotReplicas, NO_REPLICA_LIMITS, type ReplicaAllotment, type ReplicaLimits } from '../targets/replica-limits';
import type { PushTarget, TargetPusher } from '../targets/push-targets';
import { SandboxWarmPoolResource } from '../resources';
import { routableNodes, WarmCounts, type RoutableNode } from './fleet-view';
import {
  POOL_REASONS,
  desiredPoolStatus,
  invalidPoolStatus,
  poolEvents,
  sameRecordedKeys,
  statusDiffers,
  transitions,
  type PoolProblem,
} from './pool-status';

/**
 * A pool's warm count changes with every publish while it fills; writing each change would
 * cost one status write per node per publish. Count-only changes are written at most this often;
 * a condition or generation change is written at once.
 */
export const STATUS_COUNT_INTERVAL_MS = 1000;

/** The one request every NodeInventory and SandboxTemplate event maps to. */
export const SYNC_REQUEST: ReconcileRequest = { namespace: '', name: 'sync' };

export interface WarmPoolReconcilerOptions {
  kubeConfig: KubeConfig;
  pools: Informer<SandboxWarmPool>;
  templates: Informer<SandboxTemplate>;
  inventories: Informer<NodeInventory>;
  /** Undefined without a fleet token: nothing is sent to nodes and every pool says why (fail closed). */
  pusher: TargetPusher | undefined;
  events: EventRecorder;
  log: Logger;
  syncIntervalMs: number;
  /** The one namespace this driver drives ('' or absent: all); it then owns only some of each node's keys. */
  namespace?: string;
  /** Most replicas kept warm per pool and per namespace (0 or absent: no limit). */
  limits?: ReplicaLimits;
}

/**
 * What the driver keeps warm for one pool. Rebuilt from `status.poolKey` and
 * `status.retiringPoolKey` after a restart or failover (docs/adr/0002), so a template that
 * is missing then never drains a node.
 */
interface PoolMemory {
  key: PoolKey;
  /** The key before a template change: kept at its targets until the new key is warm, then drained. */
  retiring?: PoolKey;
  /** Set when the new key is warm: the next sync stops holding the old key, then the record drops it. */
  releaseRetiring?: boolean;
}

/** A key this process stopped driving: never carried over until each node of the fleet accepted a PUT without it. */
interface DrainingKey {
  key: PoolKey;
  pending: Set<string>;
}

type Resolved = { key: PoolKey } | { problem: PoolProblem };

const idOf = (p: SandboxWarmPool): string => `${p.metadata.namespace ?? ''}/${p.metadata.name ?? ''}`;
const showKey = (k: PoolKey): string => `${k.template}/${k.net}/${k.size}`;
const TEMPLATE_FIELD = 'spec.sandboxTemplateRef.name';
/** The reason of the Warning event naming pod template fields a microVM does not use. */
export const IGNORED_FIELDS_REASON = 'PodTemplateFieldsIgnored';

const keysFingerprint = (key: PoolKeyLike, retiring: PoolKeyLike | undefined): string =>
  `${poolKeyId(key)}|${retiring ? poolKeyId(retiring) : ''}`;

/** The keys a status records, normalised; undefined when it records none. */
function recalled(status: SandboxWarmPoolStatus | undefined): PoolMemory | undefined {
  if (!status?.poolKey) return undefined;
  return {
    key: normalizePoolKey(status.poolKey),
    ...(status.retiringPoolKey ? { retiring: normalizePoolKey(status.retiringPoolKey) } : {}),
  };
}

/**
 * Level-based and global, as the reference driver: every request runs one sync of all pools,
 * because a node's PUT carries the full set of pools that target it. A pool whose template
 * cannot be read stays on its last-good key; only deleting the pool drains its key.
 */
export class WarmPoolReconciler implements Reconciler {
  /** Status writes made (read by the bench). */
  statusWrites = 0;
  /** Completed syncs (tests wait on it instead of sleeping). */
  syncs = 0;
  /** Pool id (namespace/name) -> warm VMs of its key counted at the last sync (read by the metrics). */
  readonly warmByPool = new Map<string, number>();
  private readonly memory = new Map<string, PoolMemory>();
  private readonly warm = new WarmCounts();
  private readonly invalidWritten = new Map<string, string>();
  /** Pool id -> the template version whose ignored pod template fields were last reported. */
  private readonly ignoredNoted = new Map<string, string>();
  private readonly lastStatusWrite = new Map<string, number>();
  /** Key ids driven last sync, to notice the ones that stop being driven. */
  private owned = new Map<string, PoolKey>();
  private readonly draining = new Map<string, DrainingKey>();
  /** Pool id -> the keys this process recorded in its status (see keysFingerprint). */
  private readonly recorded = new Map<string, string>();
  /** Pool id -> its warm target under the replica limits, this sync. */
  private allotments = new Map<string, ReplicaAllotment>();
  private deferredStatus = false;
  private warnedNoToken = false;
  private inDoubt = false;

  constructor(private readonly opts: WarmPoolReconcilerOptions) {}

  async reconcile(req: ReconcileRequest, ctx: ReconcileContext): Promise<ReconcileResult | void> {
    const again = await this.sync(ctx.signal);
    const isSync = req.namespace === SYNC_REQUEST.namespace && req.name === SYNC_REQUEST.name;
    if (again) return { requeueAfterMs: 100 };
    if (this.deferredStatus) return { requeueAfterMs: STATUS_COUNT_INTERVAL_MS };
    return isSync ? { requeueAfterMs: this.opts.syncIntervalMs } : undefined;
  }

  /** One pass; true when an old key was just released and a quick follow-up should drain it. */
  async sync(signal: AbortSignal): Promise<boolean> {
    const { pools, inventories } = this.opts;
    const nodes = routableNodes(inventories.list());
    const inventoryOf = (n: string): NodeInventory | undefined => inventories.get(undefined, n);
    const live = pools.list();
    this.allotments = allotReplicas(
      live.map((p) => ({
        id: idOf(p),
        namespace: p.metadata.namespace ?? '',
        name: p.metadata.name ?? '',
        createdAt: p.metadata.creationTimestamp,
        replicas: p.spec.replicas,
      })),
      this.opts.limits ?? NO_REPLICA_LIMITS,
    );
    const { spread, problems, owned, unattributed } = this.collect(live);
    this.trackDraining(owned);
    const plan = planTargets({ pools: spread, held: [], nodes });
    // Keys on a node that this driver cannot attribute belong to another namespace's driver, or
    // to a pool whose key is unknown here: they are carried over, never drained (ADR 0002).
    const carryOver = (this.opts.namespace ?? '') !== '' || unattributed.length > 0;
    this.noteDoubt(unattributed);
    const written = await this.recordKeys(live, nodes, problems, signal);
    const fleetProblem = await this.push(nodes, plan.byNode, owned, carryOver, signal);
    let released = false;
    this.deferredStatus = false;
    const failures: unknown[] = [];
    for (const pool of live) {
      const id = idOf(pool);
      const mem = this.memory.get(id);
      const malformed = pools.malformedObject(pool.metadata.namespace, pool.metadata.name ?? '') !== undefined;
      if (malformed) continue;
      const current = written.get(id) ?? pool.status;
      if (!mem) {
        await this.writeStatus(pool, current, this.statusOf(pool, 0, nodes, problems.get(id) ?? fleetProblem, undefined), signal).catch(
          (e: unknown) => failures.push(e),
        );
        continue;
      }
      const warm = this.warm.warmOf(poolKeyId(mem.key), nodes, inventoryOf);
      this.warmByPool.set(id, warm);
      if (mem.retiring && !mem.releaseRetiring && warm >= this.targetOf(pool) && !problems.has(id)) {
        mem.releaseRetiring = true;
        released = true;
      }
      await this.writeStatus(pool, current, this.statusOf(pool, warm, nodes, problems.get(id) ?? fleetProblem, mem), signal).catch(
        (e: unknown) => failures.push(e),
      );
    }
    await this.reportMalformed(signal).catch((e: unknown) => failures.push(e));
    this.syncs++;
    if (failures.length > 0) throw failures[0];
    return released;
  }

  /**
   * Each pool's key: its template's when readable, else the one remembered (this process) or
   * recorded in its status (an earlier one). `unattributed` names the pools in scope whose key
   * is unknown: while there are any, no key on a node can be called nobody's.
   */
  private collect(live: readonly SandboxWarmPool[]): {
    spread: SpreadPool[];
    problems: Map<string, PoolProblem>;
    owned: Map<string, PoolKey>;
    unattributed: string[];
  } {
    const spread: SpreadPool[] = [];
    const problems = new Map<string, PoolProblem>();
    const owned = new Map<string, PoolKey>();
    const unattributed: string[] = [];
    const liveIds = new Set<string>();
    for (const pool of live) {
      const id = idOf(pool);
      liveIds.add(id);
      let mem = this.memory.get(id) ?? recalled(pool.status);
      if (mem?.releaseRetiring) mem = { key: mem.key };
      const r = this.resolve(pool);
      if ('problem' in r) {
        problems.set(id, {
          reason: r.problem.reason,
          message: mem
            ? `${r.problem.message}; running on the last-good targets of pool key ${showKey(mem.key)} (status.poolKey) until the template is back or the pool is deleted`
            : `${r.problem.message}; no pool key was ever recorded for this pool (status.poolKey), so it has no targets, and pool keys on the nodes that no pool accounts for are kept until it is fixed or deleted`,
        });
        if (!mem) unattributed.push(id);
      } else if (!mem) {
        mem = { key: r.key };
      } else if (poolKeyId(mem.key) !== poolKeyId(r.key)) {
        // A newer change replaces a retiring key that never finished: that one drains now.
        // updateStrategy Recreate drains the old key at once; OnReplenish keeps it until the new one is warm.
        mem = pool.spec.updateStrategy?.type === 'Recreate' ? { key: r.key } : { key: r.key, retiring: mem.key };
      }
      if (!mem) {
        this.memory.delete(id);
        continue;
      }
      this.memory.set(id, mem);
      // Never more than the limits allow: the nodes are asked for the allotted target only.
      const replicas = this.targetOf(pool);
      spread.push({ id, key: mem.key, replicas });
      owned.set(poolKeyId(mem.key), mem.key);
      if (mem.retiring) {
        spread.push({ id: `${id}#retiring`, key: mem.retiring, replicas });
        owned.set(poolKeyId(mem.retiring), mem.retiring);
      }
    }
    // A pool that never parsed is not listed; its key (if any) cannot be read either.
    for (const { ref } of this.opts.pools.malformedObjects()) {
      const id = `${ref.namespace ?? ''}/${ref.name}`;
      if (!liveIds.has(id)) unattributed.push(id);
    }
    for (const id of this.memory.keys()) if (!liveIds.has(id)) this.memory.delete(id);
    for (const id of this.warmByPool.keys()) if (!this.memory.has(id)) this.warmByPool.delete(id);
    for (const id of this.lastStatusWrite.keys()) if (!liveIds.has(id)) this.lastStatusWrite.delete(id);
    for (const id of this.recorded.keys()) if (!liveIds.has(id)) this.recorded.delete(id);
    for (const id of this.ignoredNoted.keys()) if (!liveIds.has(id)) this.ignoredNoted.delete(id);
    return { spread, problems, owned, unattributed };
  }

  /**
   * Keys that stopped being driven stay out of every carried-over set until each node that
   * publishes a NodeInventory accepted a PUT without them. A node that is stale or draining now
   * stays pending, so it drains the key when it comes back; a node whose inventory is gone is
   * dropped (it is no longer part of the fleet this driver sees).
   */
  private trackDraining(owned: ReadonlyMap<string, PoolKey>): void {
    const fleet = new Set(this.opts.inventories.list().map((inv) => inv.node));
    for (const [kid, key] of this.owned) if (!owned.has(kid)) this.draining.set(kid, { key, pending: new Set(fleet) });
    for (const kid of owned.keys()) this.draining.delete(kid);
    this.owned = new Map(owned);
    for (const [kid, d] of this.draining) {
      for (const n of d.pending) if (!fleet.has(n)) d.pending.delete(n);
      if (d.pending.size === 0) this.draining.delete(kid);
    }
  }

  private noteDoubt(unattributed: readonly string[]): void {
    const doubt = unattributed.length > 0;
    if (doubt && !this.inDoubt) {
      this.opts.log.warn(
        { pools: unattributed.slice(0, 5), count: unattributed.length },
        'pools without a known pool key: keys on the nodes that no pool accounts for are kept, not drained, until these pools are fixed or deleted',
      );
    }
    this.inDoubt = doubt;
  }

  /**
   * Records a pool's new keys in its status before any node is told about them, so a driver
   * that takes over later knows which key the nodes keep warm for the pool. A failed record
   * fails the sync: nothing is sent that could not be recalled.
   */
  private async recordKeys(
    live: readonly SandboxWarmPool[],
    nodes: readonly RoutableNode[],
    problems: ReadonlyMap<string, PoolProblem>,
    signal: AbortSignal,
  ): Promise<Map<string, SandboxWarmPoolStatus>> {
    const written = new Map<string, SandboxWarmPoolStatus>();
    const inventoryOf = (n: string): NodeInventory | undefined => this.opts.inventories.get(undefined, n);
    for (const pool of live) {
      const id = idOf(pool);
      const mem = this.memory.get(id);
      if (!mem || this.opts.pools.malformedObject(pool.metadata.namespace, pool.metadata.name ?? '') !== undefined) continue;
      const want = keysFingerprint(mem.key, mem.retiring);
      const cached = pool.status?.poolKey ? keysFingerprint(pool.status.poolKey, pool.status.retiringPoolKey) : '';
      // The cache lags this process's own write by a watch event: remember what was written.
      if (cached === want || this.recorded.get(id) === want) continue;
      // A released retiring key needs no record first: it is dropped after the nodes drained it.
      if (mem.retiring === undefined && pool.status?.poolKey && poolKeyId(pool.status.poolKey) === poolKeyId(mem.key)) continue;
      const desired = this.statusOf(pool, this.warm.warmOf(poolKeyId(mem.key), nodes, inventoryOf), nodes, problems.get(id), mem);
      await this.writeStatus(pool, pool.status, desired, signal, true);
      this.recorded.set(id, want);
      written.set(id, desired);
    }
    return written;
  }

  /** The pool's warm target this sync: spec.replicas, held to the per-pool and per-namespace limits. */
  private targetOf(pool: SandboxWarmPool): number {
    return this.allotments.get(idOf(pool))?.target ?? pool.spec.replicas;
  }

  private resolve(pool: SandboxWarmPool): Resolved {
    const ns = pool.metadata.namespace;
    const name = pool.spec.sandboxTemplateRef.name;
    const bad = this.opts.templates.malformedObject(ns, name);
    if (bad)
      return {
        problem: {
          reason: POOL_REASONS.templateInvalid,
          message: `${TEMPLATE_FIELD}: SandboxTemplate "${name}" is invalid (${bad.fieldPath}: ${bad.message})`,
        },
      };
    const tpl = this.opts.templates.get(ns, name);
    if (!tpl)
      return { problem: { reason: POOL_REASONS.templateNotFound, message: `${TEMPLATE_FIELD}: SandboxTemplate "${name}" not found` } };
    // a template asking for what a microVM does not do is refused as an invalid one: nothing new is warmed for it
    const [refused] = refusedTemplateFields(tpl.spec);
    if (refused)
      return {
        problem: {
          reason: POOL_REASONS.invalidSpec,
          message: `${TEMPLATE_FIELD}: SandboxTemplate "${name}" ${refused.field}: ${refused.message}`,
        },
      };
    this.noteIgnoredFields(pool, tpl);
    const key = poolKeyForTemplate(tpl);
    if (key.template === '')
      return {
        problem: { reason: POOL_REASONS.templateInvalid, message: `${TEMPLATE_FIELD}: SandboxTemplate "${name}" has no container image` },
      };
    return { key };
  }

  /**
   * A Warning event on the pool naming the pod template fields a microVM does not use, once
   * per template version (the template itself has no status to carry it).
   */
  private noteIgnoredFields(pool: SandboxWarmPool, tpl: SandboxTemplate): void {
    const id = idOf(pool);
    const version = `${tpl.metadata.uid ?? ''}/${tpl.metadata.resourceVersion ?? ''}`;
    if (this.ignoredNoted.get(id) === version) return;
    this.ignoredNoted.set(id, version);
    const fields = ignoredPodTemplateFields(tpl.spec.podTemplate, { at: 'spec.podTemplate', netAnnotationCounts: true });
    if (fields.length === 0) return;
    this.opts.events.record(involvedObjectOf(pool), {
      type: 'Warning',
      reason: IGNORED_FIELDS_REASON,
      action: 'SyncWarmTargets',
      note: `SandboxTemplate "${tpl.metadata.name ?? ''}": ${ignoredPodTemplateMessage(fields)}`,
    });
  }

  private async push(
    nodes: readonly RoutableNode[],
    byNode: ReadonlyMap<string, NodePoolSpec[]>,
    owned: ReadonlyMap<string, PoolKey>,
    carry: boolean,
    signal: AbortSignal,
  ): Promise<PoolProblem | undefined> {
    const { pusher, log } = this.opts;
    if (!pusher) {
      if (!this.warnedNoToken)
        log.error('no fleet token (--fleet-token-file or SANDBOX_SCALE_FLEET_TOKEN): refusing to send warm targets to any node');
      this.warnedNoToken = true;
      return {
        reason: POOL_REASONS.fleetTokenMissing,
        message: 'no sandboxd fleet token is configured: warm targets are not sent to any node (fail closed)',
      };
    }
    pusher.retain(new Set(nodes.map((n) => n.name)));
    const drainingIds = new Set(this.draining.keys());
    const compared = carry ? new Set([...owned.keys(), ...drainingIds]) : undefined;
    const targets = nodes.map((n): PushTarget => {
      const inv = this.opts.inventories.get(undefined, n.name);
      const reportRv = inv?.metadata.resourceVersion ?? '';
      const t: PushTarget = {
        node: n.name,
        address: n.address,
        pools: byNode.get(n.name) ?? [],
        reportRv,
        ...(carry ? { carryOver: { draining: drainingIds } } : {}),
      };
      // Only an unchanged set can drift: a changed one is PUT anyway.
      const drifted =
        pusher.isCurrent(t) &&
        needsRepush({
          desired: t.pools,
          reported: inv?.pools,
          reportRv,
          rvAtLastPut: pusher.rvAtLastPut(n.name),
          ...(compared ? { compared } : {}),
        });
      return drifted ? { ...t, repush: true } : t;
    });
    const results = await pusher.push(targets, signal);
    const failed: string[] = [];
    for (const r of results) {
      if (r.ok) {
        this.warm.recordPut(r.node, this.opts.inventories.get(undefined, r.node)?.metadata.resourceVersion ?? '', r.info);
        for (const d of this.draining.values()) d.pending.delete(r.node);
      } else failed.push(r.node);
    }
    for (const [kid, d] of this.draining) if (d.pending.size === 0) this.draining.delete(kid);
    if (failed.length === 0) return undefined;
    return {
      reason: POOL_REASONS.pushFailed,
      message: `PUT /v1/pools failed on ${failed.length} node(s) (${failed.slice(0, 5).join(', ')}); they keep their previous targets`,
    };
  }

  private statusOf(
    pool: SandboxWarmPool,
    warm: number,
    nodes: readonly RoutableNode[],
    problem: PoolProblem | undefined,
    mem: PoolMemory | undefined,
  ): SandboxWarmPoolStatus {
    // A released retiring key stays recorded until the sync that drains it: recorded before the
    // nodes are told to keep it, dropped only after they were told to drain it.
    return desiredPoolStatus(
      {
        name: pool.metadata.name ?? '',
        generation: pool.metadata.generation,
        replicas: pool.spec.replicas,
        allotment: this.allotments.get(idOf(pool)),
        warm,
        routableNodes: nodes.length,
        problem,
        now: new Date(),
        ...(mem ? { poolKey: mem.key } : {}),
        ...(mem?.retiring ? { retiringPoolKey: mem.retiring } : {}),
      },
      pool.status,
    );
  }

  /** `current` is what the API server holds as far as this sync knows (the cache, or this sync's earlier write). */
  private async writeStatus(
    pool: SandboxWarmPool,
    current: SandboxWarmPoolStatus | undefined,
    desired: SandboxWarmPoolStatus,
    signal: AbortSignal,
    immediate = false,
  ): Promise<void> {
    if (!statusDiffers(current, desired)) return;
    const id = idOf(pool);
    const now = Date.now();
    const countOnly =
      transitions(current, desired).length === 0 &&
      current?.observedGeneration === desired.observedGeneration &&
      current?.selector === desired.selector &&
      sameRecordedKeys(current, desired);
    if (!immediate && countOnly && now - (this.lastStatusWrite.get(id) ?? 0) < STATUS_COUNT_INTERVAL_MS) {
      this.deferredStatus = true;
      return;
    }
    this.lastStatusWrite.set(id, now);
    await this.apply(pool.metadata.namespace ?? '', pool.metadata.name ?? '', desired, signal);
    for (const e of poolEvents(current, desired))
      this.opts.events.record(involvedObjectOf(pool), { type: e.type, reason: e.reason, action: 'SyncWarmTargets', note: e.note });
  }

  private async reportMalformed(signal: AbortSignal): Promise<void> {
    const seen = new Set<string>();
    for (const { ref, failure } of this.opts.pools.malformedObjects()) {
      const key = `${ref.namespace ?? ''}/${ref.name}`;
      seen.add(key);
      const current = this.opts.pools.get(ref.namespace, ref.name)?.status;
      const desired = invalidPoolStatus(ref.name, failure.fieldPath, failure.message, current, new Date());
      const fingerprint = `${failure.resourceVersion ?? ''}:${failure.fieldPath}`;
      if (this.invalidWritten.get(key) === fingerprint) continue;
      await this.apply(ref.namespace ?? '', ref.name, desired, signal);
      this.invalidWritten.set(key, fingerprint);
      this.opts.log.warn(
        { namespace: ref.namespace, name: ref.name, field: failure.fieldPath, reason: CONDITION_REASONS.invalidMetadata },
        'SandboxWarmPool is invalid; reported in its conditions',
      );
    }
    for (const k of this.invalidWritten.keys()) if (!seen.has(k)) this.invalidWritten.delete(k);
  }

  private async apply(namespace: string, name: string, status: SandboxWarmPoolStatus, signal: AbortSignal): Promise<void> {
    this.statusWrites++;
    await applyStatus(
      this.opts.kubeConfig,
      {
        apiVersion: SandboxWarmPoolResource.group + '/' + SandboxWarmPoolResource.version,
        kind: SandboxWarmPoolResource.kind,
        metadata: { name, namespace },
        status,
      },
      { fieldManager: FIELD_MANAGERS.warmpoolDriver, force: true, resource: SandboxWarmPoolResource, signal },
    );
  }
}
