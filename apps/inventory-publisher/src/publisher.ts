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
  INVENTORY_ROW_MAX_CHARS,
  INVENTORY_SEQ_ANNOTATION,
  inventoryObjectName,
  LIMITS,
  RESOURCES,
  type NodeInventory,
} from '@sandbox-scale/scale-core';
import type { SandboxdClient } from '@sandbox-scale/sandboxd-client';
import type { Registry } from 'prom-client';
import { buildEntries, buildInventory, keepTransitionTimes, markStale, sameInventory, type InventoryBody } from './build-inventory';
import type { PublisherConfig } from './config';
import { publisherMetrics, type PublishResult, type PublisherMetrics } from './publisher-metrics';
import type { NodeNotifier } from './node-notifier';
import { oversizedEntries, splitInventory, storedBody } from './split-inventory';

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
  /** Tells sandbox-apiserver of each change between publishes (docs/adr/0007); sandboxd is then read every noticeIntervalMs. */
  notifier?: NodeNotifier;
}

/** One read of sandboxd: the body it makes and its place in the node's read sequence. */
interface Observation {
  body: InventoryBody;
  seq: number;
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
  /** Reads of sandboxd run one at a time, so a later sequence number never carries an older state. */
  private reading: Promise<unknown> = Promise.resolve();
  private seq = 0;
  /** The read lastApplied was built from: a Stale body keeps those entries, so it keeps that number. */
  private appliedSeq = 0;

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
    // between publishes, sandboxd is read often and each change told to sandbox-apiserver; etcd is written at publishes only
    const noticeMs = this.opts.config.noticeIntervalMs ?? 0;
    const polling = this.opts.notifier !== undefined && noticeMs > 0 ? this.poll(noticeMs, signal) : Promise.resolve();
    while (!signal.aborted) {
      await this.runOnce(signal);
      await this.waitNext(signal, this.opts.config.publishIntervalMs, true);
    }
    await polling;
    await this.opts.notifier?.idle();
  }

  private async poll(intervalMs: number, signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.inOrder(() => this.observeEntries(signal));
      await this.waitNext(signal, intervalMs, false);
    }
  }

  private waitNext(signal: AbortSignal, intervalMs: number, wakeable: boolean): Promise<void> {
    const ms = jitter(intervalMs, 0.1);
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        if (wakeable) this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      if (wakeable) this.wake = done;
    });
  }

  private async tick(signal?: AbortSignal): Promise<PublishResult> {
    const observed = await this.observeInOrder(signal);
    const next = observed?.body;
    if (observed === undefined || next === undefined) {
      this.metrics.publish('stale');
      return 'stale';
    }
    const gone = this.opts.inventories.hasSynced() && this.opts.inventories.get(undefined, this.opts.config.nodeName) === undefined;
    if (sameInventory(this.lastApplied, next) && !gone) {
      this.metrics.publish('unchanged');
      return 'unchanged';
    }
    try {
      await this.write(next, observed.seq, gone, signal);
    } catch (err) {
      this.metrics.publish('failed');
      this.log.warn({ err }, 'server-side apply of the NodeInventory failed; retrying next tick');
      return 'failed';
    }
    if (gone && this.lastApplied !== undefined) this.log.info('NodeInventory was deleted; rebuilt it from sandboxd');
    this.lastApplied = next;
    this.appliedSeq = observed.seq;
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
  private async write(next: InventoryBody, seq: number, gone: boolean, signal?: AbortSignal): Promise<void> {
    const oversized = oversizedEntries(next);
    if (oversized.length > 0)
      this.log.warn(
        { sandboxes: oversized.length, ids: oversized.slice(0, 5).map((e) => (e.id ?? e.name).slice(0, 80)) },
        `sandboxes left out of the NodeInventory: their row is over ${INVENTORY_ROW_MAX_CHARS} characters`,
      );
    const objects = splitInventory(next, this.opts.maxObjectBytes ?? INVENTORY_OBJECT_MAX_BYTES);
    const written = [...this.lastObjects];
    for (let part = objects.length - 1; part >= 0; part--) {
      const obj = objects[part] as InventoryBody;
      if (!gone && sameInventory(written[part], obj)) continue;
      this.writes++;
      // the node's own object carries the read it was built from; a change of that alone is no write
      const body = storedBody(part === 0 ? withSeq(obj, seq) : obj);
      await applyObject(this.opts.kubeConfig, body, {
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

  /** One read at a time, each with the next sequence number (see `reading`). */
  private observeInOrder(signal?: AbortSignal): Promise<Observation | undefined> {
    return this.inOrder(() => this.observe(signal));
  }

  private inOrder<T>(read: () => Promise<T>): Promise<T> {
    const run = this.reading.then(read);
    this.reading = run.catch(() => undefined);
    return run;
  }

  /**
   * A read between publishes, for notices only: the sandboxes alone (pools and drain state wait
   * for the publish). A failure is left to the publish tick, which marks the inventory Stale.
   */
  private async observeEntries(signal: AbortSignal): Promise<void> {
    const timeout = AbortSignal.timeout(LIMITS.sandboxdTimeoutMs);
    try {
      const rows = await this.opts.sandboxd.sandboxes(undefined, { signal: AbortSignal.any([signal, timeout]) });
      this.opts.notifier?.observed(this.nextSeq(), buildEntries(rows, this.opts.config.advertiseAddress));
    } catch {
      // reported by the next publish tick
    }
  }

  /**
   * The next number of the node's read sequence: the read's wall-clock milliseconds, kept strictly
   * increasing, and past what the node's object says an earlier run published (a restart on a
   * clock that went back must not look older than what replicas hold).
   */
  private nextSeq(): number {
    if (this.seq === 0) {
      const own = this.opts.inventories.get(undefined, this.opts.config.nodeName);
      const published = Number(own?.metadata.annotations?.[INVENTORY_SEQ_ANNOTATION] ?? 0);
      if (Number.isSafeInteger(published)) this.seq = published;
    }
    this.seq = Math.max(this.seq + 1, this.now().getTime());
    return this.seq;
  }

  /** The body to publish now: fresh from sandboxd, or the last one marked Stale; undefined if there is none yet. */
  private async observe(signal?: AbortSignal): Promise<Observation | undefined> {
    const { config, sandboxd } = this.opts;
    const timeout = AbortSignal.timeout(LIMITS.sandboxdTimeoutMs);
    const callSignal = signal ? AbortSignal.any([signal, timeout]) : timeout;
    try {
      const [rows, info] = await Promise.all([
        sandboxd.sandboxes(undefined, { signal: callSignal }),
        sandboxd.info({ signal: callSignal }),
      ]);
      const seq = this.nextSeq();
      if (this.staleSince) this.log.info('sandboxd answers again; NodeInventory is current');
      this.staleSince = undefined;
      this.metrics.stale(false);
      this.metrics.fresh(this.now().getTime());
      const body = keepTransitionTimes(
        this.lastApplied,
        buildInventory({ node: config.nodeName, address: config.advertiseAddress, labels: config.labels, rows, info, now: this.now() }),
      );
      this.opts.notifier?.observed(seq, body.entries ?? []);
      return { body, seq };
    } catch (err) {
      if (!this.staleSince) this.log.warn({ err }, 'sandboxd unreachable; keeping the last NodeInventory, marked Stale');
      this.staleSince ??= this.now();
      this.metrics.stale(true);
      if (this.lastApplied === undefined) return undefined;
      const message = `sandboxd at ${config.sandboxdUrl} did not answer: ${err instanceof Error ? err.message : String(err)}`;
      // the entries are those of the last read, so they keep its sequence number
      return { body: keepTransitionTimes(this.lastApplied, markStale(this.lastApplied, message, this.staleSince)), seq: this.appliedSeq };
    }
  }
}

/** The body with its read's sequence number (INVENTORY_SEQ_ANNOTATION). */
function withSeq(body: InventoryBody, seq: number): InventoryBody {
  return { ...body, metadata: { ...body.metadata, annotations: { [INVENTORY_SEQ_ANNOTATION]: String(seq) } } };
}
