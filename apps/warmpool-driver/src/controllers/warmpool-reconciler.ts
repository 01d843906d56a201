import type { KubeConfig } from '@kubernetes/client-node';
import { applyStatus, involvedObjectOf, type EventRecorder, type Informer, type Logger, type ReconcileContext, type ReconcileRequest, type ReconcileResult, type Reconciler } from '@sandbox-scale/kube-runtime';
import {
  CONDITION_REASONS,
  CONDITION_STATUS,
  CONDITION_TYPES,
  FIELD_MANAGERS,
  poolKeyForTemplate,
  poolKeyId,
  type NodeInventory,
  type PoolKey,
  type SandboxTemplate,
  type SandboxWarmPool,
  type SandboxWarmPoolStatus,
} from '@sandbox-scale/scale-core';
import { planTargets, type HeldPool, type NodePoolSpec, type SpreadPool } from '../targets/plan-targets';
import { needsRepush } from '../targets/node-drift';
import type { PushTarget, TargetPusher } from '../targets/push-targets';
import { SandboxWarmPoolResource } from '../resources';
import { routableNodes, WarmCounts, type RoutableNode } from './fleet-view';
import { POOL_REASONS, desiredPoolStatus, invalidPoolStatus, statusDiffers, transitions, type PoolProblem } from './pool-status';

/**
 * A pool's warm count changes with every publish while it fills; writing each change would
 * cost one status write per node per publish. Count-only changes are written at most this often;
 * a condition or generation change is written at once.
 */
export const STATUS_COUNT_INTERVAL_MS = 1000;

/** The one request every NodeInventory and SandboxTemplate event maps to (scale-contracts §2.8). */
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
}

interface PoolMemory {
  key: PoolKey;
  targets: Map<string, number>;
  /** The key before a template change: kept at its targets until the new key is warm, then drained. */
  retiring?: { key: PoolKey; targets: Map<string, number> };
}

type Resolved = { key: PoolKey } | { problem: PoolProblem };

const idOf = (p: SandboxWarmPool): string => `${p.metadata.namespace ?? ''}/${p.metadata.name ?? ''}`;

/**
 * Level-based and global, as the reference driver: every request runs one sync of all pools,
 * because a node's PUT carries the full set of pools that target it. Last good targets are
 * kept when a template cannot be read (§13.10); only deleting a pool drains its key.
 */
export class WarmPoolReconciler implements Reconciler {
  /** Status writes made (read by the bench). */
  statusWrites = 0;
  /** Completed syncs (tests wait on it instead of sleeping). */
  syncs = 0;
  private readonly memory = new Map<string, PoolMemory>();
  private readonly warm = new WarmCounts();
  private readonly invalidWritten = new Map<string, string>();
  private readonly lastStatusWrite = new Map<string, number>();
  private deferredStatus = false;
  private warnedNoToken = false;

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
    const { spread, held, problems, keys } = this.collect(live);
    for (const id of this.memory.keys()) if (!keys.has(id)) this.memory.delete(id);
    for (const id of this.lastStatusWrite.keys()) if (!keys.has(id)) this.lastStatusWrite.delete(id);
    const plan = planTargets({ pools: spread, held, nodes });
    for (const [id, key] of keys) this.memory.set(id, { key, targets: plan.byPool.get(id) ?? new Map(), retiring: this.memory.get(id)?.retiring });
    const fleetProblem = await this.push(nodes, plan.byNode, signal);
    let released = false;
    this.deferredStatus = false;
    const failures: unknown[] = [];
    for (const pool of live) {
      const id = idOf(pool);
      const mem = this.memory.get(id);
      const malformed = pools.malformedObject(pool.metadata.namespace, pool.metadata.name ?? '') !== undefined;
      if (malformed || !mem) {
        if (!malformed) await this.writeStatus(pool, this.statusOf(pool, 0, nodes, problems.get(id) ?? fleetProblem), signal).catch((e: unknown) => failures.push(e));
        continue;
      }
      const warm = this.warm.warmOf(poolKeyId(mem.key), nodes, inventoryOf);
      if (mem.retiring && warm >= pool.spec.replicas && !problems.has(id)) {
        mem.retiring = undefined;
        released = true;
      }
      await this.writeStatus(pool, this.statusOf(pool, warm, nodes, problems.get(id) ?? fleetProblem), signal).catch((e: unknown) => failures.push(e));
    }
    await this.reportMalformed(signal).catch((e: unknown) => failures.push(e));
    this.syncs++;
    if (failures.length > 0) throw failures[0];
    return released;
  }

  private collect(live: readonly SandboxWarmPool[]): { spread: SpreadPool[]; held: HeldPool[]; problems: Map<string, PoolProblem>; keys: Map<string, PoolKey> } {
    const spread: SpreadPool[] = [];
    const held: HeldPool[] = [];
    const problems = new Map<string, PoolProblem>();
    const keys = new Map<string, PoolKey>();
    for (const pool of live) {
      const id = idOf(pool);
      const mem = this.memory.get(id);
      const r = this.resolve(pool);
      if ('problem' in r) {
        problems.set(id, r.problem);
        if (mem) {
          held.push({ id, key: mem.key, targets: mem.targets });
          keys.set(id, mem.key);
        }
      } else {
        if (mem && poolKeyId(mem.key) !== poolKeyId(r.key)) mem.retiring = { key: mem.key, targets: mem.targets };
        spread.push({ id, key: r.key, replicas: pool.spec.replicas });
        keys.set(id, r.key);
      }
      if (mem?.retiring) held.push({ id: `${id}#retiring`, key: mem.retiring.key, targets: mem.retiring.targets });
    }
    return { spread, held, problems, keys };
  }

  private resolve(pool: SandboxWarmPool): Resolved {
    const ns = pool.metadata.namespace;
    const name = pool.spec.sandboxTemplateRef.name;
    const bad = this.opts.templates.malformedObject(ns, name);
    if (bad) return { problem: { reason: POOL_REASONS.templateInvalid, message: `SandboxTemplate ${name} is invalid (${bad.fieldPath}: ${bad.message}); keeping the last warm targets` } };
    const tpl = this.opts.templates.get(ns, name);
    if (!tpl) return { problem: { reason: POOL_REASONS.templateNotFound, message: `SandboxTemplate ${name} not found; keeping the last warm targets` } };
    const key = poolKeyForTemplate(tpl);
    if (key.template === '') return { problem: { reason: POOL_REASONS.templateInvalid, message: `SandboxTemplate ${name} has no container image; keeping the last warm targets` } };
    return { key };
  }

  private async push(nodes: readonly RoutableNode[], byNode: ReadonlyMap<string, NodePoolSpec[]>, signal: AbortSignal): Promise<PoolProblem | undefined> {
    const { pusher, log } = this.opts;
    if (!pusher) {
      if (!this.warnedNoToken) log.error('no fleet token (--fleet-token-file or SANDBOX_SCALE_FLEET_TOKEN): refusing to send warm targets to any node');
      this.warnedNoToken = true;
      return { reason: POOL_REASONS.fleetTokenMissing, message: 'no sandboxd fleet token is configured: warm targets are not sent to any node (fail closed)' };
    }
    pusher.retain(new Set(nodes.map((n) => n.name)));
    const targets = nodes.map((n): PushTarget => {
      const inv = this.opts.inventories.get(undefined, n.name);
      const reportRv = inv?.metadata.resourceVersion ?? '';
      const t: PushTarget = { node: n.name, address: n.address, pools: byNode.get(n.name) ?? [], reportRv };
      // Only an unchanged set can drift: a changed one is PUT anyway.
      const drifted = pusher.isCurrent(t) && needsRepush({ desired: t.pools, reported: inv?.pools, reportRv, rvAtLastPut: pusher.rvAtLastPut(n.name) });
      return drifted ? { ...t, repush: true } : t;
    });
    const results = await pusher.push(targets, signal);
    const failed: string[] = [];
    for (const r of results) {
      if (r.ok) this.warm.recordPut(r.node, this.opts.inventories.get(undefined, r.node)?.metadata.resourceVersion ?? '', r.info);
      else failed.push(r.node);
    }
    if (failed.length === 0) return undefined;
    return { reason: POOL_REASONS.pushFailed, message: `PUT /v1/pools failed on ${failed.length} node(s) (${failed.slice(0, 5).join(', ')}); they keep their previous targets` };
  }

  private statusOf(pool: SandboxWarmPool, warm: number, nodes: readonly RoutableNode[], problem: PoolProblem | undefined): SandboxWarmPoolStatus {
    return desiredPoolStatus(
      { name: pool.metadata.name ?? '', generation: pool.metadata.generation, replicas: pool.spec.replicas, warm, routableNodes: nodes.length, problem, now: new Date() },
      pool.status,
    );
  }

  private async writeStatus(pool: SandboxWarmPool, desired: SandboxWarmPoolStatus, signal: AbortSignal): Promise<void> {
    if (!statusDiffers(pool.status, desired)) return;
    const id = idOf(pool);
    const now = Date.now();
    const countOnly = transitions(pool.status, desired).length === 0 && pool.status?.observedGeneration === desired.observedGeneration && pool.status?.selector === desired.selector;
    if (countOnly && now - (this.lastStatusWrite.get(id) ?? 0) < STATUS_COUNT_INTERVAL_MS) {
      this.deferredStatus = true;
      return;
    }
    this.lastStatusWrite.set(id, now);
    await this.apply(pool.metadata.namespace ?? '', pool.metadata.name ?? '', desired, signal);
    for (const c of transitions(pool.status, desired)) {
      const bad = (c.type === CONDITION_TYPES.degraded) === (c.status === CONDITION_STATUS.true);
      this.opts.events.record(involvedObjectOf(pool), { type: bad ? 'Warning' : 'Normal', reason: c.reason, action: 'SyncWarmTargets', note: c.message });
    }
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
      this.opts.log.warn({ namespace: ref.namespace, name: ref.name, field: failure.fieldPath, reason: CONDITION_REASONS.invalidMetadata }, 'SandboxWarmPool is invalid; reported in its conditions');
    }
    for (const k of this.invalidWritten.keys()) if (!seen.has(k)) this.invalidWritten.delete(k);
  }

  private async apply(namespace: string, name: string, status: SandboxWarmPoolStatus, signal: AbortSignal): Promise<void> {
    this.statusWrites++;
    await applyStatus(
      this.opts.kubeConfig,
      { apiVersion: SandboxWarmPoolResource.group + '/' + SandboxWarmPoolResource.version, kind: SandboxWarmPoolResource.kind, metadata: { name, namespace }, status },
      { fieldManager: FIELD_MANAGERS.warmpoolDriver, force: true, resource: SandboxWarmPoolResource, signal },
    );
  }
}
