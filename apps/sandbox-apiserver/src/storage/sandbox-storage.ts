import {
  ANNOTATIONS,
  ClaimIndex,
  fieldSelectorMatches,
  isSandboxdNotFound,
  labelSelectorMatches,
  NotFoundError,
  RESOURCES,
  SANDBOX_API_VERSION,
  SANDBOX_GROUP,
  sandboxFieldSet,
  synthesizeSandbox,
  type ServedSandbox,
} from '@sandbox-scale/scale-core';
import { isNotFound as isSandboxdMissing } from '@sandbox-scale/sandboxd-client';
import { encodeContinue, type ListQuery } from './list-query';
import type { NodeRouter } from './node-router';
import type { Revisions } from './revisions';
import type { SandboxView } from './sandbox-view';

export const SANDBOX_RESOURCE = { group: SANDBOX_GROUP, resource: RESOURCES.sandbox.plural };

export interface SandboxList {
  readonly apiVersion: typeof SANDBOX_API_VERSION;
  readonly kind: 'SandboxList';
  readonly metadata: { resourceVersion: string; continue?: string };
  readonly items: ServedSandbox[];
}

/** Where a sandbox lives, for delete and lifecycle verbs: they act on the claim id, never the name. */
export interface SandboxLocation {
  readonly node: string;
  readonly claimId: string;
  readonly object: ServedSandbox;
}

export function matches(q: Pick<ListQuery, 'namespace' | 'labels' | 'fields'>, s: ServedSandbox): boolean {
  if (q.namespace !== '' && s.metadata.namespace !== q.namespace) return false;
  if (q.labels.requirements.length > 0 && !labelSelectorMatches(q.labels, s.metadata.labels)) return false;
  return q.fields.requirements.length === 0 || fieldSelectorMatches(q.fields, sandboxFieldSet(s));
}

/**
 * Reads of `sandboxes` (scale-contracts §6.5, §6.6 with the §13.1 fixes): lists come from the
 * informer-fed view; a get is one map lookup, then the claim-time index and the owning node for
 * a sandbox created moments ago, never a sweep of every inventory.
 */
export class SandboxStorage {
  constructor(
    readonly view: SandboxView,
    readonly index: ClaimIndex,
    readonly router: NodeRouter,
    readonly revisions: Revisions,
  ) {}

  list(q: ListQuery): SandboxList {
    const keys: Array<{ key: string; row: Parameters<SandboxView['objectOf']>[0] }> = [];
    // namespace, then name (compareByNamespaceName's order): NUL sorts below every name character
    const after = q.after.replace('/', '\u0000');
    const prefix = `${q.namespace}/`;
    for (const row of this.view.rows()) {
      if (q.namespace !== '' && !row.key.startsWith(prefix)) continue;
      const key = row.key.replace('/', '\u0000');
      if (after !== '' && key <= after) continue;
      keys.push({ key, row });
    }
    keys.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const items: ServedSandbox[] = [];
    let last = '';
    let more = false;
    for (const { row } of keys) {
      const obj = this.view.objectOf(row);
      if (!matches(q, obj)) continue;
      if (q.limit > 0 && items.length >= q.limit) {
        more = true;
        break;
      }
      items.push(obj);
      last = row.key;
    }
    const metadata = { resourceVersion: String(this.revisions.current), ...(more ? { continue: encodeContinue(last) } : {}) };
    return { apiVersion: SANDBOX_API_VERSION, kind: 'SandboxList', metadata, items };
  }

  async get(namespace: string, name: string): Promise<ServedSandbox> {
    return (await this.locate(namespace, name)).object;
  }

  /** The view first, then the claim-time index asking the owning node; else NotFound. */
  async locate(namespace: string, name: string): Promise<SandboxLocation> {
    const row = this.view.get(namespace, name);
    if (row !== undefined) {
      const object = this.view.objectOf(row);
      return { node: row.node, claimId: row.entry.id ?? object.metadata.annotations?.[ANNOTATIONS.claimId] ?? '', object };
    }
    const loc = this.index.getByName(namespace, name);
    if (loc === undefined || !this.router.configured) throw new NotFoundError(SANDBOX_RESOURCE, name);
    try {
      const detail = await this.router.clientFor(loc.node, 'get', loc.claimId).sandbox(loc.claimId, { signal: AbortSignal.timeout(10_000) });
      const entry = {
        name: `${namespace}/${name}`,
        id: detail.id,
        phase: detail.hibernated ? 'Paused' : 'Running',
        ...(detail.claimRef ? { claimRef: detail.claimRef } : {}),
        ...(detail.deadline ? { deadline: detail.deadline.toISOString() } : {}),
        ...(detail.claimedAt ? { claimedAt: detail.claimedAt.toISOString() } : {}),
      };
      const object = synthesizeSandbox(loc.node, entry, { resourceVersion: String(this.revisions.current) });
      return { node: loc.node, claimId: loc.claimId, object };
    } catch (err) {
      if (isSandboxdMissing(err) || isSandboxdNotFound(err)) {
        this.index.deleteByName(namespace, name);
        throw new NotFoundError(SANDBOX_RESOURCE, name, { cause: err });
      }
      throw err;
    }
  }
}
