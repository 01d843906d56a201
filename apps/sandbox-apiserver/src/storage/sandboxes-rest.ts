import type { Logger } from '@sandbox-scale/kube-runtime';
import {
  CapacityLedger,
  ClaimIndex,
  provenOwnerOf,
  RESOURCES,
  SANDBOX_API_VERSION,
  SANDBOX_SELECTABLE_FIELDS,
  SandboxSchema,
  StatusError,
  type OwnerRefKey,
  type PoolKeyLike,
  type Rng,
  type Sandbox,
  type ServedSandbox,
} from '@sandbox-scale/scale-core';
import type { SandboxdClientSet } from '@sandbox-scale/sandboxd-client';
import type { SandboxVerbs } from '../peers/sandbox-verbs';
import {
  ResourceVersionTooOldError,
  type InitialEvents,
  type Listener,
  type SandboxEvent,
  type WatchStart,
  type WatchSubscription,
} from '../resource/events';
import type { ListQuery } from '../resource/list-query';
import { matches } from '../resource/selection';
import { SandboxCreator } from './create-sandbox';
import type { DeleteRequest } from './delete-sandbox';
import { DEFAULT_LEASE_TTL_SECONDS, LeasePolicy } from './lease-policy';
import { LifecycleStorage } from './lifecycle-storage';
import { NodeRouter } from './node-router';
import { toManagedFields } from './managed-fields';
import { APPLY_PATCH_TYPE } from './patch-sandbox';
import { metadataOfCreate, nowOf, patchSandbox, type PatchContext } from './patch-storage';
import type { CreateRequest, ObjectList, PatchRequest, PatchResult, ResourceStorage } from './rest';
import { applySandbox } from './server-side-apply';
import { Revisions } from './revisions';
import { SandboxCache, type Row } from './sandbox-cache';
import { SandboxStorage } from './sandbox-storage';
import { sandboxTable, type TableOptions } from './sandbox-table';
import { lowerBound, sortKeyOf } from './sorted-rows';
import type { UserMetadataStore } from './user-metadata';
import { FanOutGate, type FanOutCaps } from './fan-out-gate';
import { WatchHub } from './watch-hub';

export interface SandboxesRESTOptions {
  readonly clients: SandboxdClientSet | undefined;
  /** How long a vanished inventory's sandboxes are still served (see SandboxCache). */
  readonly graceMs: number;
  readonly overlayTtlMs: number;
  readonly claimIndexMaxBytes: number;
  readonly watchHistory: number;
  readonly rng: Rng;
  readonly log: Logger;
  /** Lease of a VM that lives until deleted (see LeasePolicy); default 15 min. */
  readonly leaseTtlSeconds?: number;
  /** Proves the claim references written here (see OwnerRefKey); shared with claim-controller and every replica. */
  readonly claimRefKey?: OwnerRefKey;
  /** Told each time a node's unproven row is kept from a name a proven row holds (a metric counts it). */
  readonly onShadowRefused?: () => void;
  /** Requests that ask every node, in flight at once (see FanOutGate); default DEFAULT_FAN_OUT_CAPS. */
  readonly fanOut?: FanOutCaps;
}

/**
 * The storage of `sandboxes` (sample-apiserver's registry REST, metrics-server's pkg/api): every
 * verb of the resource on one object, composed of its parts:
 * - reads (list, get, locate) from the informer-fed cache, the claim-time index and the nodes;
 * - watch from the cache's change events and their history (the hub);
 * - create, delete, patch and the lifecycle actions on one name, through the verbs of the
 *   replica that owns the name (owner routing, set once the peers are known);
 * - the table conversion kubectl prints.
 */
export class SandboxesREST implements ResourceStorage {
  readonly resource = RESOURCES.sandbox.plural;
  readonly kind = RESOURCES.sandbox.kind;
  readonly apiVersion = SANDBOX_API_VERSION;
  readonly schema = SandboxSchema;
  readonly selectableFields = SANDBOX_SELECTABLE_FIELDS;

  readonly hub: WatchHub;
  readonly cache: SandboxCache;
  readonly reads: SandboxStorage;
  readonly creator: SandboxCreator;
  readonly lifecycle: LifecycleStorage;
  /** Labels and annotations users set; absent when this replica runs without one (then PATCH of them is refused). */
  metadata?: UserMetadataStore;

  #named: SandboxVerbs | undefined;
  /** The revision of the first synced state: older resume points are rebuilt from a relist. */
  #startRev = 0;

  constructor(opts: SandboxesRESTOptions) {
    const revisions = new Revisions();
    this.hub = new WatchHub(opts.watchHistory);
    this.cache = new SandboxCache({
      graceMs: opts.graceMs,
      hub: this.hub,
      revisions,
      overlayTtlMs: opts.overlayTtlMs,
      // the storage's key, set just below to the one every replica and claim-controller share
      proves: (claimRef) => provenOwnerOf(claimRef, this.reads.refKey) !== undefined,
      onShadowRefused: (row, holder) => {
        opts.onShadowRefused?.();
        opts.log.warn(
          { node: row.node, sandboxId: row.entry.id, name: row.entry.name, servedFrom: holder.node },
          'a node reports a sandbox name under a claim reference this control plane did not write; another node holds the name under one it did, and keeps it',
        );
      },
    });
    this.reads = new SandboxStorage(
      this.cache,
      new ClaimIndex({ maxBytes: opts.claimIndexMaxBytes }),
      new NodeRouter(this.cache, opts.clients),
      revisions,
    );
    this.reads.leases = new LeasePolicy(opts.leaseTtlSeconds ?? DEFAULT_LEASE_TTL_SECONDS);
    if (opts.claimRefKey !== undefined) this.reads.refKey = opts.claimRefKey;
    if (opts.fanOut !== undefined) this.reads.fanOut = new FanOutGate(opts.fanOut);
    this.creator = new SandboxCreator(this.reads, new CapacityLedger(), opts.rng, opts.log);
    this.lifecycle = new LifecycleStorage(this.reads);
  }

  get revision(): number {
    return this.reads.revisions.current;
  }

  /** The verbs on one name go through `verbs`: this replica's own, or owner routing over the peers. */
  routeThrough(verbs: SandboxVerbs): void {
    this.#named = verbs;
  }

  /** Keeps users' labels and annotations in `store` and serves them on every object. */
  useMetadata(store: UserMetadataStore): void {
    this.metadata = store;
    this.cache.decorate = (obj) => store.decorate(obj);
  }

  /**
   * The inventory informer has synced at etcd revision `etcdRv`: lists are served as of it,
   * changes from now on are events, and a watch can resume from here on.
   */
  markSynced(etcdRv: string | undefined): void {
    this.reads.revisions.advanceTo(etcdRv);
    this.cache.live = true;
    this.#startRev = this.reads.revisions.current;
  }

  async list(q: ListQuery): Promise<ObjectList> {
    // until owner routing is set every page is this replica's own, as it is for a lone replica
    return this.#named === undefined ? this.reads.list(q) : this.#named.list(q);
  }

  watch(q: ListQuery, start: WatchStart, listener: Listener): WatchSubscription {
    const stop = this.hub.subscribe(listener);
    try {
      return { initial: this.#initialEvents(q, start), stop };
    } catch (err) {
      stop();
      throw err;
    }
  }

  get(namespace: string, name: string): Promise<ServedSandbox> {
    return this.#verbs().get(namespace, name);
  }

  create(namespace: string, body: unknown, opts: CreateRequest): Promise<Sandbox> {
    return this.#create(namespace, body, opts, 'Update');
  }

  async #create(namespace: string, body: unknown, opts: CreateRequest, operation: 'Apply' | 'Update'): Promise<Sandbox> {
    const created = await this.#verbs().create(namespace, body, { dryRun: opts.dryRun });
    // labels and annotations of the request (and what else of it reads do not show) outlive the
    // create response: the node keeps none of them
    const md = metadataOfCreate(body, opts.fieldManager ?? '', operation, nowOf({}));
    if (md !== undefined && this.metadata !== undefined && created.metadata.uid) {
      if (!opts.dryRun) await this.metadata.set(namespace, created.metadata.name ?? '', created.metadata.uid, md);
      const owners = md.owners ?? [];
      return owners.length === 0 ? created : { ...created, metadata: { ...created.metadata, managedFields: toManagedFields(owners) } };
    }
    return created;
  }

  delete(namespace: string, name: string, req: DeleteRequest): Promise<ServedSandbox> {
    return this.#verbs().delete(namespace, name, req);
  }

  async patch(namespace: string, name: string, req: PatchRequest): Promise<PatchResult> {
    const c: Omit<PatchContext, 'type'> = {
      namespace,
      name,
      patch: req.patch,
      dryRun: req.dryRun,
      manager: req.fieldManager,
      verbs: this,
      cache: this.cache,
      store: this.metadata,
    };
    if (req.type === APPLY_PATCH_TYPE)
      return applySandbox({
        ...c,
        force: req.force,
        create: (body) => this.#create(namespace, body, { dryRun: req.dryRun, fieldManager: req.fieldManager }, 'Apply'),
      });
    return { object: await patchSandbox({ ...c, type: req.type }), created: false };
  }

  /** The pool key the node claimed the sandbox from, as the node reports it. */
  async poolKeyOf(namespace: string, name: string): Promise<PoolKeyLike> {
    const loc = await this.reads.locate(namespace, name);
    const detail = await this.reads.router
      .clientFor(loc.node, 'get', loc.claimId)
      .sandbox(loc.claimId, { signal: AbortSignal.timeout(10_000) });
    return detail.key;
  }

  act(namespace: string, name: string, action: string, body: unknown, dryRun: boolean): Promise<Record<string, unknown> | ServedSandbox> {
    return this.#verbs().act(namespace, name, action, body, dryRun);
  }

  convertToTable(items: readonly ServedSandbox[], opts: TableOptions): Record<string, unknown> {
    return sandboxTable(items, opts);
  }

  stop(): void {
    this.cache.stop();
  }

  #verbs(): SandboxVerbs {
    if (this.#named === undefined) throw new StatusError('ServiceUnavailable', 'sandbox-apiserver is starting', { retryAfterSeconds: 1 });
    return this.#named;
  }

  /** The events a watch starts with; throws ResourceVersionTooOldError when it cannot resume. */
  #initialEvents(q: ListQuery, start: WatchStart): InitialEvents {
    if (start.sendInitialEvents || start.rv === '' || start.rv === '0') return this.#listEvents(q);
    if (!/^[0-9]+$/.test(start.rv)) throw new StatusError('BadRequest', `invalid resourceVersion ${JSON.stringify(start.rv)}`);
    const n = Number(start.rv);
    const current = this.revision;
    // A resume point from before this process synced is 410 Expired, as kube-apiserver's watch
    // cache answers after a restart. Replaying the rows changed since would miss every sandbox
    // deleted while this process was down: nothing here remembers what existed at that revision,
    // so only a relist lets the client's cache drop them (client-go's reflector relists on 410).
    if (n < this.#startRev) throw new ResourceVersionTooOldError(n, this.#startRev);
    // A point ahead of this replica (its list came from a replica whose informer is further on)
    // resumes from here: the inventory changes this one has yet to see arrive as it sees them,
    // at the same etcd-derived revisions, and an event the client already has is a no-op to it.
    const events = this.hub.since(Math.min(n, current));
    let i = 0;
    return { rev: current, next: () => events[i++] };
  }

  /** ADDED per matching sandbox, walked lazily over an immutable snapshot of the cache. */
  #listEvents(q: ListQuery): InitialEvents {
    const { keys, rows } = this.cache.sortedRows();
    let i = q.namespace === '' ? 0 : lowerBound(keys, sortKeyOf(q.namespace, ''));
    const end = q.namespace === '' ? keys.length : lowerBound(keys, `${q.namespace}\u0001`);
    return {
      rev: this.revision,
      next: (): SandboxEvent | null | undefined => {
        if (i >= end) return undefined;
        const object = this.cache.objectOf(rows[i++] as Row);
        return matches(q, object) ? { type: 'ADDED', rev: Number(object.metadata.resourceVersion), object } : null;
      },
    };
  }
}
