import type {
  WireCheckpoint,
  WireClaimReply,
  WireNodeInfo,
  WireSandboxDetail,
  WireSandboxRow,
  WireStats,
} from '@sandbox-scale/sandboxd-client';
import type { CheckpointRecord } from './lineage';
import { renderMetrics } from './node-metrics';
import type { NodeState } from './node-state';
import { ARCHIVED, HIBERNATED, NO_DEADLINE, RUNNING, type Sandbox } from './sandbox';
import { SIZE_TIERS, wireKey, type SimKey } from './wire-key';

/** Wire encodings of the node's state, typed by the client's reply schemas. */

const ZERO_TIME = '0001-01-01T00:00:00Z';

/** RFC 3339 in UTC at second precision, as Go formats time.RFC3339. */
export function rfc3339(wallMs: number): string {
  return `${new Date(wallMs).toISOString().slice(0, 19)}Z`;
}

export function nodeTime(node: NodeState, rel: number): string {
  return rel === NO_DEADLINE ? ZERO_TIME : rfc3339(node.wallMs(rel));
}

export function claimReply(node: NodeState, sb: Sandbox): WireClaimReply {
  return {
    id: sb.id,
    token: sb.token,
    deadline: nodeTime(node, sb.deadline),
    owner_addr: node.advertiseAddr,
    ...(sb.templateDigest ? { template_digest: sb.templateDigest } : {}),
    ...(sb.fromCheckpoint ? { from_checkpoint: sb.fromCheckpoint } : {}),
  };
}

export function sandboxRow(node: NodeState, sb: Sandbox): WireSandboxRow {
  return {
    id: sb.id,
    key: wireKey(sb.key),
    deadline: nodeTime(node, sb.deadline),
    claimed_at: nodeTime(node, sb.claimedAt),
    // An archived claim has no local VM: archived, not hibernated.
    hibernated: sb.state === HIBERNATED,
    ...(sb.state === ARCHIVED ? { archived: true } : {}),
    ...(sb.fromCheckpoint ? { from_checkpoint: sb.fromCheckpoint } : {}),
    ...(sb.claimRef ? { claim_ref: sb.claimRef } : {}),
  };
}

/** The token is shown only on a node with an api_token (never on an open node). */
export function sandboxDetail(node: NodeState, sb: Sandbox): WireSandboxDetail {
  return { ...sandboxRow(node, sb), ...(node.rootToken !== '' ? { token: sb.token } : {}) };
}

function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export function statsReply(node: NodeState, sb: Sandbox): WireStats {
  const tier = SIZE_TIERS[sb.key.size];
  const measured = sb.state === RUNNING;
  // A stable, plausible figure per sandbox: 20–60 % of the tier's memory.
  const used = measured ? Math.floor(tier.memBytes * (0.2 + (fnv1a(sb.id) % 400) / 1000)) : 0;
  return {
    id: sb.id,
    cpu_count: tier.cpus,
    mem_total_bytes: tier.memBytes,
    mem_used_bytes: used,
    mem_used_measured: measured,
    hibernated: sb.state === HIBERNATED,
    measured_at: rfc3339(node.clock.now()),
  };
}

export function checkpointWire(node: NodeState, c: CheckpointRecord): WireCheckpoint {
  return {
    id: c.id,
    ...(c.name ? { name: c.name } : {}),
    sandbox_id: c.sandboxId,
    key: wireKey(c.key),
    ...(c.tenant ? { tenant: c.tenant } : {}),
    created_at: nodeTime(node, c.createdAt),
  };
}

/** Pools come in a stable order: the daemon sorts by a hash of the key. */
function poolOrder(a: { key: SimKey }, b: { key: SimKey }): number {
  return fnv1a(a.key.id) - fnv1a(b.key.id) || (a.key.id < b.key.id ? -1 : 1);
}

export function infoReply(node: NodeState): WireNodeInfo {
  const now = node.now();
  const peers = node.mesh?.peerAddrs() ?? [];
  const reason = node.atCapacityReason;
  return {
    pools: node.pools
      .list()
      .sort(poolOrder)
      .map((p) => ({ key: wireKey(p.key), warm: p.warm, refilling: p.refilling, target: p.target(now), golden: p.golden })),
    claimed: node.claimed,
    hibernated: node.hibernated,
    archived: node.archived,
    ...(node.draining ? { draining: true } : {}),
    ...(reason !== undefined ? { at_capacity: true, at_capacity_reason: reason } : {}),
    ...(peers.length > 0 ? { peers } : {}),
  };
}

export function metricsText(node: NodeState): string {
  const now = node.now();
  return renderMetrics({
    claimed: node.claimed,
    hibernated: node.hibernated,
    archived: node.archived,
    draining: node.draining,
    mesh: node.mesh !== undefined,
    tenants: node.config.tenants.map((t) => ({ name: t.name, claims: node.tenantClaims(t.name) })),
    pools: node.pools
      .list()
      .sort(poolOrder)
      .map((p) => ({ ...wireKey(p.key), warm: p.warm, target: p.target(now) })),
    counters: node.metrics,
  });
}
