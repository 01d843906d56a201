import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import type { Registry } from 'prom-client';
import { SandboxScaleError } from '@sandbox-scale/scale-core';
import type { Logger } from '../log/logger';
import { type ReconcileRequest, type Reconciler, parseRequestKey, requestKey } from '../reconcile/reconciler';
import { isTerminalError } from '../reconcile/terminal-error';
import type { Runnable } from '../runnable';
import type { Timers } from '../time';
import { type ControllerMetrics, type ReconcileOutcome, controllerMetrics } from './controller-metrics';
import { ItemBackoff, type ItemBackoffOptions } from './rate-limiter';
import { WorkQueue } from './work-queue';

/**
 * Something that turns changes into requests: subscribes, and returns how to unsubscribe.
 * `cancelDelayed` drops a request's delayed requeue (the primary source calls it when its
 * object is deleted, before the request for the delete).
 */
export interface Source {
  start(enqueue: (req: ReconcileRequest) => void, cancelDelayed?: (req: ReconcileRequest) => void): () => void;
}

export interface ControllerOptions {
  name: string;
  reconciler: Reconciler;
  log: Logger;
  /** Keys reconciled at once; default 1. */
  concurrency?: number;
  registry?: Registry;
  backoff?: ItemBackoffOptions;
  /** Default true: only the leader reconciles. */
  needLeaderElection?: boolean;
  timers?: Timers;
}

/**
 * One reconciler behind one work queue. This is the one place that turns reconcile outcomes
 * into queue actions, logs a failure once per attempt with its reconcileId, and counts it.
 */
export class Controller implements Runnable {
  readonly name: string;
  readonly needLeaderElection: boolean;
  private readonly queue: WorkQueue;
  private readonly backoff: ItemBackoff;
  private readonly metrics: ControllerMetrics;
  private readonly log: Logger;
  private readonly sources: Source[] = [];
  private readonly inflight = new AbortController();
  private started = false;

  constructor(private readonly opts: ControllerOptions) {
    // every concurrent reconcile's API calls listen on this one signal; more than the default
    // ten listeners is expected here, not a leak
    setMaxListeners(0, this.inflight.signal);
    this.name = opts.name;
    this.needLeaderElection = opts.needLeaderElection ?? true;
    this.metrics = controllerMetrics(opts.registry, opts.name);
    this.log = opts.log.child({ controller: opts.name });
    this.backoff = new ItemBackoff(opts.backoff);
    this.queue = new WorkQueue({
      concurrency: opts.concurrency ?? 1,
      timers: opts.timers,
      onDepth: (n) => this.metrics.depth(n),
      onError: (key, err) => this.log.error({ err, key }, 'work queue task escaped its handler'),
    });
  }

  /** Adds a source; sources subscribe when the controller starts. */
  watch(source: Source): this {
    if (this.started) throw new SandboxScaleError(`controller ${this.name}: sources must be added before start`);
    this.sources.push(source);
    return this;
  }

  enqueue(req: ReconcileRequest): void {
    this.queue.add(requestKey(req));
  }

  enqueueAfter(req: ReconcileRequest, delayMs: number): void {
    this.queue.addAfter(requestKey(req), delayMs);
  }

  async start(signal: AbortSignal): Promise<void> {
    if (this.started) throw new SandboxScaleError(`controller ${this.name} started twice`);
    this.started = true;
    const unsubscribe = this.sources.map((s) =>
      s.start(
        (req) => this.enqueue(req),
        (req) => this.queue.cancelDelayed(requestKey(req)),
      ),
    );
    this.queue.start((key) => this.reconcileKey(key));
    this.log.info({ concurrency: this.opts.concurrency ?? 1 }, 'controller started');
    await new Promise<void>((resolve) => {
      if (signal.aborted) return resolve();
      signal.addEventListener('abort', () => resolve(), { once: true });
    });
    for (const u of unsubscribe) u();
    this.queue.shutDown();
    this.inflight.abort();
    await this.queue.drain();
    this.log.info('controller stopped');
  }

  async drain(): Promise<void> {
    await this.queue.drain();
  }

  private async reconcileKey(key: string): Promise<void> {
    const req = parseRequestKey(key);
    const reconcileId = randomUUID();
    const log = this.log.child({ reconcileId, namespace: req.namespace || undefined, name: req.name });
    const started = performance.now();
    let outcome: ReconcileOutcome;
    this.metrics.active(1);
    try {
      const result = await this.opts.reconciler.reconcile(req, { signal: this.inflight.signal, log, reconcileId });
      this.backoff.forget(key);
      const after = result?.requeueAfterMs;
      if (after !== undefined && after > 0) {
        this.queue.addAfter(key, after);
        outcome = 'requeue_after';
      } else {
        outcome = 'success';
      }
    } catch (err) {
      outcome = this.onError(key, err, log);
    } finally {
      this.metrics.active(-1);
    }
    this.metrics.reconciled(outcome, (performance.now() - started) / 1000);
  }

  private onError(key: string, err: unknown, log: Logger): ReconcileOutcome {
    if (this.inflight.signal.aborted) {
      // the controller is stopping and aborted this reconcile: nothing failed, and the next
      // leader (or this process after a restart) reconciles the key again from the cache
      log.debug({ err }, 'reconcile aborted by shutdown');
      return 'error';
    }
    if (isTerminalError(err)) {
      this.backoff.forget(key);
      log.error({ err }, 'reconcile failed terminally; not retrying');
      return 'terminal_error';
    }
    const retryInMs = this.backoff.when(key);
    this.queue.addAfter(key, retryInMs);
    log.error({ err, retryInMs, retries: this.backoff.retries(key) }, 'reconcile failed; retrying with backoff');
    return 'error';
  }
}
