import type { KubeConfig } from '@kubernetes/client-node';
import type { Registry } from 'prom-client';
import type { Logger } from '../log/logger';
import { type KubeObject, keyFieldsOf, objectKey, type KeyFields } from '../client/object-meta';
import { type KubeResource, resourceName } from '../client/resource';
import { sleep as realSleep, type BackoffOptions, type Sleep } from '@sandbox-scale/scale-core';
import { LOOP_WAIT } from '../time';
import { Backoff } from './backoff';
import { informerMetrics, type InformerMetrics } from './informer-metrics';
import { KubeListWatcher, type ListWatchScope, type ListWatcher, type WatchEventType } from './list-watcher';
import { HandlerSet, type InformerHandlers, type ObjectRef } from './handler-set';
import { ObjectStore } from './object-store';
import { type ParseFailure, describeParseError } from './parse-failure';
import { SyncGate } from './sync-gate';

export type { InformerHandlers, ObjectRef };

export interface InformerOptions<T> extends ListWatchScope {
  resource: KubeResource;
  /** Turns a raw object into T; throws (naming the field) when it does not fit. */
  parse: (obj: unknown) => T;
  log: Logger;
  /** Watch restart delays; default 1 s doubling to 30 s. */
  backoff?: BackoffOptions;
  sleep?: Sleep;
  registry?: Registry;
  /** Replaces the client-node list+watch (tests). */
  listWatcher?: ListWatcher;
}

const DEFAULT_BACKOFF: BackoffOptions = { baseMs: 1000, maxMs: 30_000 };
// A stream that ends at once with nothing in it is a failing server, not a timeout: back off.
const MIN_HEALTHY_WATCH_MS = 1000;

/**
 * List once, then watch from the list's resourceVersion, forever: a clean end resumes from the
 * last resourceVersion seen, 410 Gone relists, any other error restarts after a backoff. The
 * cache holds typed objects only; one that fails to parse is logged once per resourceVersion
 * and reported to `malformed` handlers, and a valid earlier copy stays cached.
 */
export class Informer<T extends KubeObject> {
  readonly name: string;
  private readonly store = new ObjectStore<T>();
  private readonly malformedByKey = new Map<string, ParseFailure>();
  private readonly handlers: HandlerSet<T>;
  private readonly sync = new SyncGate();
  private readonly backoff: Backoff;
  private readonly metrics: InformerMetrics;
  private readonly sleep: Sleep;
  private readonly log: Logger;
  private readonly lw: ListWatcher;
  private rv: string | undefined;
  private stopper: AbortController | undefined;
  private loop: Promise<void> | undefined;

  constructor(private readonly opts: InformerOptions<T> & { listWatcher: ListWatcher }) {
    this.name = resourceName(opts.resource) + (opts.namespace ? `@${opts.namespace}` : '');
    this.lw = opts.listWatcher;
    this.backoff = new Backoff(opts.backoff ?? DEFAULT_BACKOFF);
    this.metrics = informerMetrics(opts.registry, resourceName(opts.resource));
    this.sleep = opts.sleep ?? realSleep;
    this.log = opts.log.child({ informer: this.name });
    this.handlers = new HandlerSet<T>(this.log, () => this.metrics.handlerError());
  }

  get lastSyncResourceVersion(): string | undefined {
    return this.rv;
  }

  hasSynced(): boolean {
    return this.sync.done;
  }

  /** True once the first list is in the cache; false if the signal aborted first. */
  waitForSync(signal?: AbortSignal): Promise<boolean> {
    return this.sync.wait(signal);
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return this.store.get(this.opts.resource.namespaced ? namespace : undefined, name);
  }

  list(namespace?: string): readonly T[] {
    return this.store.list(namespace);
  }

  malformedObject(namespace: string | undefined, name: string): ParseFailure | undefined {
    return this.malformedByKey.get(objectKey(this.opts.resource.namespaced ? namespace : undefined, name));
  }

  /** Every object that exists but failed to parse, with why. */
  malformedObjects(): Array<{ ref: ObjectRef; failure: ParseFailure }> {
    return [...this.malformedByKey.entries()].map(([key, failure]) => ({ ref: refOf(key), failure }));
  }

  /** Adds handlers; returns the function that removes them. */
  on(h: InformerHandlers<T>): () => void {
    return this.handlers.add(h);
  }

  start(): void {
    if (this.loop) return;
    this.stopper = new AbortController();
    this.loop = this.run(this.stopper.signal);
  }

  async stop(): Promise<void> {
    this.stopper?.abort();
    await this.loop;
  }

  private async run(signal: AbortSignal): Promise<void> {
    let needList = true;
    while (!signal.aborted) {
      const started = Date.now();
      let events = 0;
      try {
        if (needList) {
          await this.relist(signal);
          needList = false;
        }
        if (signal.aborted) break;
        const end = await this.lw.watch({
          resourceVersion: this.rv ?? '0',
          signal,
          onEvent: (type, obj) => {
            events++;
            this.backoff.reset();
            this.onWatchEvent(type, obj);
          },
        });
        if (end === 'gone') {
          this.metrics.restart('gone');
          this.log.info({ resourceVersion: this.rv }, 'watch resourceVersion expired, relisting');
          needList = true;
        } else if (events === 0 && Date.now() - started < MIN_HEALTHY_WATCH_MS && !signal.aborted) {
          await this.sleep(this.backoff.next(), signal, LOOP_WAIT);
        }
      } catch (err) {
        if (signal.aborted) break;
        this.metrics.restart('error');
        const delayMs = this.backoff.next();
        this.log.warn({ err, delayMs, resourceVersion: this.rv }, 'list/watch failed, restarting after backoff');
        await this.sleep(delayMs, signal, LOOP_WAIT);
      }
    }
  }

  private async relist(signal: AbortSignal): Promise<void> {
    const { items, resourceVersion } = await this.lw.list(signal);
    const seen = new Set<string>();
    for (const raw of items) {
      const key = this.upsert(raw);
      if (key) seen.add(key);
    }
    for (const key of this.store.keys()) {
      if (!seen.has(key)) this.removeKey(key);
    }
    for (const key of [...this.malformedByKey.keys()]) {
      if (!seen.has(key)) this.removeKey(key);
    }
    this.rv = resourceVersion;
    this.metrics.objects(this.store.size);
    this.sync.open();
  }

  private onWatchEvent(type: WatchEventType, raw: unknown): void {
    // the key fields are read once per event, without a schema (the typed parse judges the rest)
    const meta = keyFieldsOf(raw);
    if (meta.resourceVersion) this.rv = meta.resourceVersion;
    if (type === 'BOOKMARK') return;
    if (type === 'DELETED') {
      if (meta.name) this.removeKey(objectKey(this.opts.resource.namespaced ? meta.namespace : undefined, meta.name));
    } else {
      this.upsert(raw, meta);
    }
    this.metrics.objects(this.store.size);
  }

  /** Parses and stores one object; returns its key (also when malformed), undefined when nameless. */
  private upsert(raw: unknown, meta: KeyFields = keyFieldsOf(raw)): string | undefined {
    if (!meta.name) return undefined;
    const ns = this.opts.resource.namespaced ? meta.namespace : undefined;
    const key = objectKey(ns, meta.name);
    let obj: T;
    try {
      obj = this.opts.parse(raw);
    } catch (err) {
      this.markMalformed(
        key,
        { namespace: ns, name: meta.name },
        { ...describeParseError(err), uid: meta.uid, resourceVersion: meta.resourceVersion },
      );
      return key;
    }
    this.malformedByKey.delete(key);
    const change = this.store.upsert(ns, meta.name, obj, meta.resourceVersion ?? '');
    if (change) this.handlers.change(change);
    return key;
  }

  private markMalformed(key: string, ref: ObjectRef, failure: ParseFailure): void {
    const prev = this.malformedByKey.get(key);
    if (prev && prev.uid === failure.uid && prev.resourceVersion === failure.resourceVersion) return;
    this.malformedByKey.set(key, failure);
    this.metrics.malformed();
    this.log.error({ namespace: ref.namespace, name: ref.name, ...failure }, 'malformed object skipped');
    this.handlers.malformed(ref, failure);
  }

  private removeKey(key: string): void {
    const { namespace: ns, name } = refOf(key);
    const wasMalformed = this.malformedByKey.delete(key);
    const change = this.store.remove(ns, name);
    if (change) this.handlers.change(change);
    else if (wasMalformed) this.handlers.malformed({ namespace: ns, name }, null);
  }
}

function refOf(key: string): ObjectRef {
  const slash = key.indexOf('/');
  return slash === -1 ? { name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** An informer over the API server of kc (list at resourceVersion=0, watch with bookmarks). */
export function createInformer<T extends KubeObject>(kc: KubeConfig, opts: InformerOptions<T>): Informer<T> {
  const listWatcher = opts.listWatcher ?? new KubeListWatcher(kc, opts.resource, opts);
  return new Informer({ ...opts, listWatcher });
}
