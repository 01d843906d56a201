import { randomBytes } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import PQueue from 'p-queue';
import type { Registry } from 'prom-client';
import { isNotFound } from '../client/api-errors';
import type { KubeObject } from '../client/object-meta';
import type { Logger } from '../log/logger';
import type { Runnable } from '../runnable';
import { counter } from '../metrics/metric-factory';
import { type Timers, realTimers, toMicroTime } from '../time';
import { type AggregatorOptions, EventAggregator, type SeriesEntry } from './event-aggregator';
import { type EventBody, type EventSink, KubeEventSink } from './event-sink';

export type InvolvedObject = EventBody['regarding'];

export interface EventInput {
  type: 'Normal' | 'Warning';
  /** UpperCamelCase, machine-readable (`PoolDrained`). */
  reason: string;
  /** What was done or failed (`Scale`, `PushTargets`). */
  action: string;
  /** Human-readable, at most 1 kB. */
  note?: string;
}

export interface EventRecorderOptions extends AggregatorOptions {
  /** `sandbox-scale/<app>`. */
  reportingController: string;
  /** This replica (pod name or leader identity). */
  reportingInstance: string;
  log: Logger;
  registry?: Registry;
  timers?: Timers;
  /** Writes waiting beyond this are dropped rather than queued; default 1000. */
  maxPendingWrites?: number;
}

/** The reference an Event needs, from any object carrying apiVersion, kind and metadata. */
export function involvedObjectOf(obj: KubeObject): InvolvedObject {
  const m = obj.metadata ?? {};
  return {
    apiVersion: obj.apiVersion,
    kind: obj.kind ?? '',
    name: m.name ?? '',
    namespace: m.namespace,
    uid: m.uid,
    resourceVersion: m.resourceVersion,
  };
}

/**
 * Records events without ever blocking the caller or flooding the API server: writes run in
 * the background one at a time, repeats become a series count, hot loops are rate limited per
 * object (see EventAggregator). Failures are logged and counted, never thrown.
 */
export class EventRecorder implements Runnable {
  readonly name = 'event-recorder';
  readonly needLeaderElection = false;
  private readonly agg: EventAggregator;
  private readonly writes = new PQueue({ concurrency: 1 });
  private readonly timers: Timers;
  private readonly outcomes;
  private flushTimer: unknown;
  private stopped = false;

  constructor(
    private readonly sink: EventSink,
    private readonly opts: EventRecorderOptions,
  ) {
    this.agg = new EventAggregator(opts);
    this.timers = opts.timers ?? realTimers;
    const c = opts.registry && counter(opts.registry, 'sandbox_scale_events_total', 'Events recorded, by outcome.', ['outcome']);
    this.outcomes = (outcome: 'created' | 'series' | 'aggregated' | 'dropped' | 'failed'): void => c?.inc({ outcome });
  }

  record(regarding: InvolvedObject, ev: EventInput): void {
    if (this.stopped) return;
    const now = this.timers.now();
    const note = ev.note && ev.note.length > 1024 ? `${ev.note.slice(0, 1021)}...` : ev.note;
    const objectKey = `${regarding.kind}/${regarding.namespace ?? ''}/${regarding.name}`;
    const key = JSON.stringify([regarding.uid ?? objectKey, ev.type, ev.reason, ev.action, note]);
    const d = this.agg.observe(key, objectKey, now);
    if (d.kind === 'drop') {
      this.outcomes('dropped');
      return;
    }
    if (d.kind === 'repeat') {
      this.outcomes('aggregated');
      return this.scheduleFlush();
    }
    // `<object>.<16 hex>` must stay within 253 characters for an object of any name
    const body: EventBody = {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: {
        name: `${regarding.name.slice(0, 236).replace(/[.-]+$/, '')}.${randomBytes(8).toString('hex')}`,
        namespace: regarding.namespace || 'default',
      },
      eventTime: toMicroTime(now),
      reportingController: this.opts.reportingController,
      reportingInstance: this.opts.reportingInstance,
      action: ev.action,
      reason: ev.reason,
      note,
      type: ev.type,
      regarding,
    };
    this.enqueue(d.entry, async () => {
      await this.sink.create(body);
      d.entry.eventName = body.metadata.name;
      d.entry.eventNamespace = body.metadata.namespace;
      this.agg.markWritten(d.entry, 1, this.timers.now());
      this.outcomes('created');
      if (d.entry.count > 1) this.scheduleFlush();
    });
  }

  /** As a manager runnable it only waits: the flush happens in drain(), after controllers stopped recording. */
  async start(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
  }

  drain(): Promise<void> {
    return this.stop();
  }

  /** Writes outstanding series counts and waits for every queued write. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.flushTimer !== undefined) this.timers.clearTimeout(this.flushTimer);
    this.flush(true);
    await this.writes.onIdle();
  }

  private scheduleFlush(): void {
    if (this.flushTimer !== undefined || this.stopped) return;
    this.flushTimer = this.timers.setTimeout(() => {
      this.flushTimer = undefined;
      this.flush(false);
      if (this.agg.hasPending()) this.scheduleFlush();
    }, this.agg.flushIntervalMs);
  }

  private flush(force: boolean): void {
    const now = this.timers.now();
    for (const e of this.agg.dueForFlush(now, force)) {
      const { eventName, eventNamespace, count, lastMs } = e;
      if (eventName === undefined || eventNamespace === undefined) continue;
      this.agg.markWritten(e, count, now);
      this.enqueue(e, async () => {
        await this.sink.patchSeries(eventNamespace, eventName, { count, lastObservedTime: toMicroTime(lastMs) });
        this.outcomes('series');
      });
    }
  }

  private enqueue(entry: SeriesEntry, write: () => Promise<void>): void {
    if (this.writes.size >= (this.opts.maxPendingWrites ?? 1000)) {
      this.outcomes('dropped');
      return;
    }
    this.writes.add(write).catch((err: unknown) => {
      // An expired Event (TTL) cannot take a series update: the next repeat starts a new one.
      if (isNotFound(err)) this.agg.forget(entry);
      this.outcomes('failed');
      this.opts.log.warn({ err, namespace: entry.eventNamespace }, 'event write failed');
    });
  }
}

export function createEventRecorder(kc: KubeConfig, opts: EventRecorderOptions): EventRecorder {
  return new EventRecorder(new KubeEventSink(kc), opts);
}
