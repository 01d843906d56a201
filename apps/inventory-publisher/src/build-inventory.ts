import type { NodeInfo, SandboxRow } from '@sandbox-scale/sandboxd-client';
import {
  CONDITION_REASONS,
  CONDITION_STATUS,
  CONDITION_TYPES,
  EXTENSIONS_API_VERSION,
  RESOURCES,
  comparePoolKeys,
  formatRfc3339Seconds,
  normalizePoolKey,
  sandboxPhaseOf,
  servedNameOf,
  servedObjectName,
  type Condition,
  type InventoryEntry,
  type PoolCapacity,
} from '@sandbox-scale/scale-core';

/** The NodeInventory body this publisher owns (every field it sets; SSA removes what it omits). */
export interface InventoryBody {
  apiVersion: typeof EXTENSIONS_API_VERSION;
  kind: 'NodeInventory';
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  node: string;
  /** Absent only on a part object (see splitInventory). */
  address?: string;
  entries?: InventoryEntry[];
  pools?: PoolCapacity[];
  conditions?: Condition[];
  [field: string]: unknown;
}

export interface NodeSnapshot {
  node: string;
  /** host:port of the node's sandboxd as others reach it. */
  address: string;
  rows: readonly SandboxRow[];
  info: NodeInfo;
  labels?: Record<string, string>;
  /** When the snapshot was taken: the Draining condition's transition time. */
  now: Date;
}

/** Hibernated and archived sandboxes are still live claims; their phase says why they do not run. */
function entryOf(row: SandboxRow, address: string): InventoryEntry {
  // served under the owner's namespace/name (claim_ref `<kind>:<uid>:<ns>/<name>`, or a legacy
  // `<ns>/<name>`); a reference that names no owner is served under the sandbox id
  const e: InventoryEntry = { name: servedNameOf(row.claimRef) ?? servedObjectName(row.id), id: row.id, phase: sandboxPhaseOf(row) };
  if (row.claimRef !== undefined) e.claimRef = row.claimRef;
  // A sandbox listens on its node: the node's host is the sandbox's pod IP.
  if (address !== '') e.addr = address;
  if (row.deadline) e.deadline = formatRfc3339Seconds(row.deadline);
  if (row.claimedAt) e.claimedAt = formatRfc3339Seconds(row.claimedAt);
  return e;
}

const byNameThenId = (a: InventoryEntry, b: InventoryEntry): number =>
  a.name < b.name ? -1 : a.name > b.name ? 1 : (a.id ?? '') < (b.id ?? '') ? -1 : (a.id ?? '') > (b.id ?? '') ? 1 : 0;

/** The node's entries as its NodeInventory lists them (sorted by name, then id). */
export function buildEntries(rows: readonly SandboxRow[], address: string): InventoryEntry[] {
  return rows.map((r) => entryOf(r, address)).sort(byNameThenId);
}

function poolOf(p: NodeInfo['pools'][number]): PoolCapacity {
  const key = normalizePoolKey(p.key);
  return { template: key.template, net: key.net, size: key.size, warm: Math.max(0, p.warm), target: Math.max(0, p.target) };
}

/**
 * sandboxd's live state -> the one NodeInventory of the node. Pure and deterministic (entries
 * and pools sorted) so an unchanged node yields an identical body and the publisher can skip
 * the write. Pools are published (the reference publishes entries only, so its nodes are never
 * claim candidates), with net and size normalised so counts match claim-side keys.
 */
export function buildInventory(s: NodeSnapshot): InventoryBody {
  const entries = buildEntries(s.rows, s.address);
  const pools = s.info.pools.map(poolOf).sort(comparePoolKeys);
  const body: InventoryBody = {
    apiVersion: EXTENSIONS_API_VERSION,
    kind: RESOURCES.nodeInventory.kind,
    metadata: s.labels && Object.keys(s.labels).length > 0 ? { name: s.node, labels: { ...s.labels } } : { name: s.node },
    node: s.node,
    address: s.address,
  };
  if (entries.length > 0) body.entries = entries;
  if (pools.length > 0) body.pools = pools;
  if (s.info.draining) {
    body.conditions = [
      {
        type: CONDITION_TYPES.draining,
        status: CONDITION_STATUS.true,
        reason: CONDITION_REASONS.nodeDraining,
        message: 'sandboxd is cordoned: no new warm targets are sent to this node',
        lastTransitionTime: formatRfc3339Seconds(s.now),
      },
    ];
  }
  return body;
}

/** The last body marked Stale: the previous report is kept, flagged as not current. */
export function markStale(last: InventoryBody, message: string, since: Date): InventoryBody {
  const others = (last.conditions ?? []).filter((c) => c.type !== CONDITION_TYPES.stale);
  const stale: Condition = {
    type: CONDITION_TYPES.stale,
    status: CONDITION_STATUS.true,
    reason: CONDITION_REASONS.sandboxdUnreachable,
    message: message.slice(0, 1024),
    lastTransitionTime: formatRfc3339Seconds(since),
  };
  return { ...last, conditions: [...others, stale] };
}

/** Equality for "did anything change": transition times are ignored, so a steady Draining or Stale is no write. */
export function sameInventory(a: InventoryBody | undefined, b: InventoryBody): boolean {
  if (a === undefined) return false;
  const strip = (x: InventoryBody): string =>
    JSON.stringify({ ...x, conditions: x.conditions?.map(({ lastTransitionTime: _t, ...c }) => c) });
  return strip(a) === strip(b);
}

/** Conditions whose status did not change keep the time they first took it. */
export function keepTransitionTimes(last: InventoryBody | undefined, next: InventoryBody): InventoryBody {
  if (!last?.conditions || !next.conditions) return next;
  const prev = new Map(last.conditions.map((c) => [c.type, c]));
  const conditions = next.conditions.map((c) => {
    const p = prev.get(c.type);
    return p && p.status === c.status ? { ...c, lastTransitionTime: p.lastTransitionTime } : c;
  });
  return { ...next, conditions };
}
