import type { KubeConfig } from '@kubernetes/client-node';
import {
  applyObject,
  ignoreNotFound,
  jitter,
  ResourceClient,
  type Informer,
  type KubeResource,
  type Logger,
  type Runnable,
} from '@sandbox-scale/kube-runtime';
import {
  FIELD_MANAGERS,
  INVENTORY_OBJECT_MAX_BYTES,
  inventoryObjectName,
  LIMITS,
  RESOURCES,
  type NodeInventory,
} from '@sandbox-scale/scale-core';
import type { SandboxdClient } from '@sandbox-scale/sandboxd-client';
import type { Registry } from 'prom-client';
import { buildInventory, keepTransitionTimes, markStale, sameInventory, type InventoryBody } from './build-inventory';
import type { PublisherConfig } from './config';
import { publisherMetrics, type PublishResult, type PublisherMetrics } from './publisher-metrics';
import { splitInventory } from './split-inventory';

/** scale-core's NodeInventory descriptor, under the name this app's code reads. */
export const NodeInventoryResource: KubeResource = RESOURCES.nodeInventory;

export interface InventoryPublisherOptions {
  config: PublisherConfig;
  kubeConfig: KubeConfig;
  sandboxd: SandboxdClient;
  /** This node's NodeInventory only (field selector on the name): tells a deleted object apart. */
  inventories: Informer<NodeInventory>;
  log: Logger;
  registry: Registry;
  now?: () => Date;
  /** Largest body one object may hold before the node's entries are split (default INVENTORY_OBJECT_MAX_BYTES). */
  maxObjectBytes?: number;
}

/**
 * One tick: read sandboxd (GET /v1/sandboxes, GET /v1/info) -> build the node's NodeInventory ->
 * server-side apply it only when it differs from the last applied one or the object is gone.
 * When sandboxd does not answer the last report is kept and marked Stale (a condition, the
 * metric sandbox_scale_inventory_publisher_stale) and the loop carries on. It never writes a
 * per-sandbox object: the write path stays O(nodes).
 */
export class InventoryPublisher implements Runnable {
  readonly name = 'inventory-publisher';
  readonly needLeaderElection = false;
  private readonly metrics: PublisherMetrics;
  private readonly log: Logger;
  private readonly now: () => Date;
  /** Server-side applies made since start (read by the bench). */
  writes = 0;
  private lastApplied: InventoryBody | undefined;
  /** The objects last written for lastApplied: the node's own, then its parts (splitInventory). */
  private lastObjects: InventoryBody[] = [];
  private readonly objects: ResourceClient;
  private staleSince: Date | undefined;
  private wake: (() => void) | undefined;
  private running: Promise<PublishResult> | undefined;

  constructor(private readonly opts: InventoryPublisherOptions) {
    this.metrics = publisherMetrics(opts.registry);
    this.log = opts.log.child({ node: opts.config.nodeName });
    this.now = opts.now ?? (() => new Date());
    this.objects = new ResourceClient(opts.kubeConfig, NodeInventoryResource);
    // A deleted NodeInventory is rebuilt at once rather than a publish interval later.
    opts.inventories.on({ delete: () => this.wake?.() });
  }

  /** The body last written to the API server (undefined before the first successful write). */
  get applied(): InventoryBody | undefined {
    return this.lastApplied;
  }

  /** One publish; never throws. Concurrent callers share the tick in flight. */
  runOnce(signal?: AbortSignal): Promise<PublishResult> {
    this.running ??= this.tick(signal).finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  async start(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.runOnce(signal);
      await this.waitNext(signal);
    }
  }

  private waitNext(signal: AbortSignal): Promise<void> {
    const ms = jitter(this.opts.config.publishIntervalMs, 0.1);
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.wake = done;
    });
  }

  private async tick(signal?: AbortSignal): Promise<PublishResult> {
    const next = await this.observe(signal);
    if (next === undefined) {
      this.metrics.publish('stale');
      return 'stale';
    }
    const gone = this.opts.inventories.hasSynced() && this.opts.inventories.get(undefined, this.opts.config.nodeName) === undefined;
    if (sameInventory(this.lastApplied, next) && !gone) {
      this.metrics.publish('unchanged');
      return 'unchanged';
    }
    try {
      await this.write(next, gone, signal);
    } catch (err) {
      this.metrics.publish('failed');
      this.log.warn({ err }, 'server-side apply of the NodeInventory failed; retrying next tick');
      return 'failed';
    }
    if (gone && this.lastApplied !== undefined) this.log.info('NodeInventory was deleted; rebuilt it from sandboxd');
    this.lastApplied = next;
    this.metrics.entries(next.entries?.length ?? 0);
    const result: PublishResult = this.staleSince ? 'stale' : 'applied';
    this.metrics.publish(result);
    return result;
  }

  /**
   * Writes the objects of `next` that changed. A node whose entries do not fit one object is
   * written as several (splitInventory); parts are written from the highest down, so an entry
   * moving between parts when their count changes is in the new part before it leaves the old,
   * and parts no longer needed are deleted last.
   */
  private async write(next: InventoryBody, gone: boolean, signal?: AbortSignal): Promise<void> {
    const objects = splitInventory(next, this.opts.maxObjectBytes ?? INVENTORY_OBJECT_MAX_BYTES);
    const written = [...this.lastObjects];
    for (let part = objects.length - 1; part >= 0; part--) {
      const obj = objects[part] as InventoryBody;
      if (!gone && sameInventory(written[part], obj)) continue;
      this.writes++;
      await applyObject(this.opts.kubeConfig, obj, {
        fieldManager: FIELD_MANAGERS.inventoryPublisher,
        force: true,
        resource: NodeInventoryResource,
        signal,
      });
      written[part] = obj;
      this.lastObjects = written;
    }
    // after a restart the node's own object says how many parts an earlier run left
    const own = this.opts.inventories.get(undefined, this.opts.config.nodeName);
    const before = Math.max(written.length, own?.parts ?? 1);
    for (let part = before - 1; part >= objects.length; part--) {
      await ignoreNotFound(this.objects.delete(undefined, inventoryObjectName(this.opts.config.nodeName, part), signal));
      written.length = Math.min(written.length, part);
      this.lastObjects = [...written];
    }
    this.lastObjects = objects;
  }

  /** The body to publish now: fresh from sandboxd, or the last one marked Stale; undefined if there is none yet. */
  private async observe(signal?: AbortSignal): Promise<InventoryBody | undefined> {
    const { config, sandboxd } = this.opts;
    const timeout = AbortSignal.timeout(LIMITS.sandboxdTimeoutMs);
    const callSignal = signal ? AbortSignal.any([signal, timeout]) : timeout;
    try {
      const [rows, info] = await Promise.all([
        sandboxd.sandboxes(undefined, { signal: callSignal }),
        sandboxd.info({ signal: callSignal }),
      ]);
      if (this.staleSince) this.log.info('sandboxd answers again; NodeInventory is current');
      this.staleSince = undefined;
      this.metrics.stale(false);
      this.metrics.fresh(this.now().getTime());
      return keepTransitionTimes(
        this.lastApplied,
        buildInventory({ node: config.nodeName, address: config.advertiseAddress, labels: config.labels, rows, info, now: this.now() }),
      );
    } catch (err) {
      if (!this.staleSince) this.log.warn({ err }, 'sandboxd unreachable; keeping the last NodeInventory, marked Stale');
      this.staleSince ??= this.now();
      this.metrics.stale(true);
      if (this.lastApplied === undefined) return undefined;
      const message = `sandboxd at ${config.sandboxdUrl} did not answer: ${err instanceof Error ? err.message : String(err)}`;
      return keepTransitionTimes(this.lastApplied, markStale(this.lastApplied, message, this.staleSince));
    }
  }
}
