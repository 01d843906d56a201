import { FanOutGate } from './fan-out-gate';
import { randomBytes } from 'node:crypto';
import {
  ANNOTATIONS,
  ClaimIndex,
  NotFoundError,
  OwnerRefKey,
  provenOwnerOf,
  RESOURCES,
  SANDBOX_API_VERSION,
  SANDBOX_GROUP,
  sandboxPhaseOf,
  StatusError,
  synthesizeSandbox,
  type ServedSandbox,
} from '@sandbox-scale/scale-core';
import { isNotFound as isSandboxdMissing } from '@sandbox-scale/sandboxd-client';
import { ContinueExpiredError, encodeContinue, type ListQuery } from '../resource/list-query';
import { exactName, matches, rowPrefilter } from '../resource/selection';
import { ListSnapshots, type ListSnapshot } from './list-snapshots';
import type { NodeRouter } from './node-router';
import type { Revisions } from './revisions';
import type { Row, SandboxCache } from './sandbox-cache';
import { lowerBound, sortKeyOf, sortKeyOfViewKey, upperBound } from './sorted-rows';
import { DEFAULT_LEASE_TTL_SECONDS, LeasePolicy } from './lease-policy';
import { SandboxNames } from './sandbox-names';

export const SANDBOX_RESOURCE = { group: SANDBOX_GROUP, resource: RESOURCES.sandbox.plural };

export interface SandboxList {
  readonly apiVersion: typeof SANDBOX_API_VERSION;
  readonly kind: 'SandboxList';
  readonly metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number };
  readonly items: ServedSandbox[];
}

/** Where a sandbox lives, for delete and lifecycle verbs: they act on the claim id, never the name. */
export interface SandboxLocation {
  readonly node: string;
  readonly claimId: string;
  readonly object: ServedSandbox;
  /** Its claim reference is one this control plane wrote: only then is it acted on (actionable()). */
  readonly proven: boolean;
}

/**
 * The location of a sandbox this control plane may act on, or a 403: a sandbox whose node reports
 * it under a claim reference this control plane did not write (another tool's, an older release's,
 * or one a node made up) is served for reading only, so what a node says never decides where a
 * tenant's commands, files, port-forwards or lifecycle calls go.
 */
export function actionable(loc: SandboxLocation, namespace: string, name: string, what: string): SandboxLocation {
  if (loc.proven) return loc;
  throw new StatusError(
    'Forbidden',
    `sandboxes.${SANDBOX_GROUP} "${name}" is forbidden: ${what} acts only on sandboxes this control plane claimed, and node ${loc.node} reports ${namespace}/${name} under a claim reference it did not write`,
    { name, group: SANDBOX_GROUP, kind: SANDBOX_RESOURCE.resource },
  );
}

/**
 * Reads of `sandboxes`: lists come from the
 * informer-fed cache; a get is one map lookup, then the claim-time index and the owning node for
 * a sandbox created moments ago, never a sweep of every inventory.
 */
export class SandboxStorage {
  constructor(
    readonly cache: SandboxCache,
    readonly index: ClaimIndex,
    readonly router: NodeRouter,
    readonly revisions: Revisions,
    readonly snapshots: ListSnapshots = new ListSnapshots(() => cache.sortedRows()),
  ) {}

  /** Whether a name is taken, for every path that makes a Sandbox. */
  readonly names = new SandboxNames(this);

  /** How long nodes are asked to keep the VMs this storage claims (set once when it is built). */
  leases: LeasePolicy = new LeasePolicy(DEFAULT_LEASE_TTL_SECONDS);

  /** Bounds the requests that ask every node for a sandbox's snapshots; set once when it is built. */
  fanOut: FanOutGate = new FanOutGate();

  /**
   * The key the claim references this storage writes are proven with (set once when it is built,
   * to the configured key every replica and claim-controller share); a storage built alone gets
   * a key of its own.
   */
  refKey: OwnerRefKey = new OwnerRefKey(randomBytes(32));

  /**
   * One page in O(log n + page): the first page takes the cache's sorted snapshot, later pages
   * find theirs by the token and resume with a binary search after the last key served.
   * Selectors filter before the limit counts, so a page holds `limit` matching items.
   */
  list(q: ListQuery): SandboxList {
    const { snap, rv } = this.#snapshotFor(q);
    const { keys, rows } = snap.rows;
    // a namespace is one contiguous run: from `ns\0` up to (not including) `ns\1`
    let i = q.namespace === '' ? 0 : lowerBound(keys, sortKeyOf(q.namespace, ''));
    let end = q.namespace === '' ? keys.length : lowerBound(keys, `${q.namespace}\u0001`);
    const name = exactName(q);
    if (name !== undefined && q.namespace !== '') {
      // metadata.name=X in one namespace (kubectl delete/wait): one key, not a scan
      i = lowerBound(keys, sortKeyOf(q.namespace, name));
      end = Math.min(end, i + 1);
    }
    if (q.continue !== undefined && q.continue.after !== '') i = Math.max(i, upperBound(keys, sortKeyOfViewKey(q.continue.after)));
    const filtered = q.labels.requirements.length > 0 || q.fields.requirements.length > 0;
    const mayMatch = rowPrefilter(q);
    const items: ServedSandbox[] = [];
    let last = '';
    let more = false;
    let remaining = 0;
    for (; i < end; i++) {
      const row = rows[i] as Row;
      // a published row is judged by its node and entry first; one created here carries its own object
      if (mayMatch !== undefined && row.created === undefined && !mayMatch(row.node, row.entry)) continue;
      const obj = this.cache.objectOf(row);
      if (filtered && !matches(q, obj)) continue;
      if (q.limit > 0 && items.length >= q.limit) {
        more = true;
        remaining = end - i;
        break;
      }
      items.push(obj);
      last = row.key;
    }
    const metadata: SandboxList['metadata'] = { resourceVersion: String(rv) };
    if (more) {
      metadata.continue = encodeContinue({ epoch: this.snapshots.epoch, snapshot: snap.id, rv, after: last });
      // only exact when no selector skips items
      if (!filtered) metadata.remainingItemCount = remaining;
    }
    return { apiVersion: SANDBOX_API_VERSION, kind: 'SandboxList', metadata, items };
  }

  #snapshotFor(q: ListQuery): { snap: ListSnapshot; rv: number } {
    const c = q.continue;
    if (c === undefined || c.snapshot === 0)
      return { snap: this.snapshots.current(), rv: c !== undefined && c.rv > 0 ? c.rv : this.revisions.current };
    const snap = this.snapshots.get(c.epoch, c.snapshot);
    if (snap !== undefined) return { snap, rv: c.rv };
    throw new ContinueExpiredError(encodeContinue({ epoch: this.snapshots.epoch, snapshot: 0, rv: 0, after: c.after }));
  }

  async get(namespace: string, name: string): Promise<ServedSandbox> {
    return (await this.locate(namespace, name)).object;
  }

  /** The cache first, then the claim-time index asking the owning node; else NotFound. */
  async locate(namespace: string, name: string): Promise<SandboxLocation> {
    const row = this.cache.get(namespace, name);
    if (row !== undefined) {
      const object = this.cache.objectOf(row);
      return {
        node: row.node,
        claimId: row.entry.id ?? object.metadata.annotations?.[ANNOTATIONS.claimId] ?? '',
        object,
        proven: this.cache.provenNow(row),
      };
    }
    const loc = this.index.getByName(namespace, name);
    if (loc === undefined || !this.router.configured) throw new NotFoundError(SANDBOX_RESOURCE, name);
    try {
      const detail = await this.router
        .clientFor(loc.node, 'get', loc.claimId)
        .sandbox(loc.claimId, { signal: AbortSignal.timeout(10_000) });
      const entry = {
        name: `${namespace}/${name}`,
        id: detail.id,
        phase: sandboxPhaseOf(detail),
        ...(detail.claimRef ? { claimRef: detail.claimRef } : {}),
        ...(detail.deadline ? { deadline: detail.deadline.toISOString() } : {}),
        ...(detail.claimedAt ? { claimedAt: detail.claimedAt.toISOString() } : {}),
      };
      const object = synthesizeSandbox(loc.node, entry, { resourceVersion: String(this.revisions.current) });
      // the claim-time index holds what this replica claimed; the node's word on the owner is checked still
      return { node: loc.node, claimId: loc.claimId, object, proven: provenOwnerOf(detail.claimRef, this.refKey) !== undefined };
    } catch (err) {
      if (isSandboxdMissing(err)) {
        this.index.deleteByName(namespace, name);
        throw new NotFoundError(SANDBOX_RESOURCE, name, { cause: err });
      }
      throw err;
    }
  }
}
