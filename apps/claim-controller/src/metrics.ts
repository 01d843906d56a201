import { counter, histogram } from '@sandbox-scale/kube-runtime';
import {
  CONDITION_STATUS,
  CONDITION_TYPES,
  OWNER_KINDS,
  parseOwnerRef,
  readyConditionFor,
  splitEntryName,
  UPSTREAM_LABELS,
  type InventoryEntry,
  type NodeInventory,
  type SandboxClaim,
  type SandboxWarmPool,
} from '@sandbox-scale/scale-core';
import { Gauge, type Registry } from 'prom-client';
import type { Assignment } from './gateway/assignment';
import type { ClaimHow } from './gateway/claim-gateway';

/** The controller's own metrics: sandbox_scale_claim_controller_<what>_<unit>, bounded labels only. */
export function claimControllerMetrics(registry: Registry) {
  // path: fast (POST /v1/claims) or claim (a SandboxClaim); start: warm (a pre-booted VM) or cold (booted for the claim)
  const claims = counter(
    registry,
    'sandbox_scale_claim_controller_claims_total',
    'Node claims, by outcome, path (fast, claim) and start (warm, cold).',
    ['outcome', 'path', 'start'],
  );
  // cold boots take seconds (the daemon allows 90 s), warm claims milliseconds
  const claimSeconds = histogram(
    registry,
    'sandbox_scale_claim_controller_claim_duration_seconds',
    'Time to a node delivery (node choice, claim, redirects), by outcome, path and start.',
    ['outcome', 'path', 'start'],
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 2.5, 5, 10, 30, 60, 120],
  );
  const records = counter(
    registry,
    'sandbox_scale_claim_controller_records_total',
    'Async Bound records of fast-path deliveries, by outcome (recorded, failed, refused: the name belongs to another object, deferred: left to the orphan pass).',
    ['outcome'],
  );
  const orphans = counter(
    registry,
    'sandbox_scale_claim_controller_orphan_items_total',
    'Deliveries seen by the orphan pass, by outcome (adopted, created: a fast-path claim written, bound, released: a second delivery of a claim that holds another, missing, foreign: another owner, unproven: a claim reference this control plane did not write, not_enabled: claim Secrets may not be written in its namespace, error).',
    ['outcome'],
  );
  const refused = counter(
    registry,
    'sandbox_scale_claim_controller_redirects_refused_total',
    'Addresses a node named (redirect targets, recorded owner addresses) not followed, by reason (unknown: no NodeInventory advertises it, stale: only a Stale one, ambiguous: more than one does).',
    ['reason'],
  );
  const renewals = counter(
    registry,
    'sandbox_scale_claim_controller_lease_renewals_total',
    'Node lease renewals of Bound claims, by outcome (renewed, lost, deferred, error).',
    ['outcome'],
  );
  const fastPath = counter(
    registry,
    'sandbox_scale_claim_controller_fast_path_requests_total',
    'Fast-path requests, by HTTP status code.',
    ['code'],
  );
  const peerCalls = counter(
    registry,
    'sandbox_scale_claim_controller_fast_path_peer_calls_total',
    'Calls to the other fast-path replicas, by op (claim: handed to the replica serving its namespace, reserve and unreserve: a name and a place under the cap taken there while the replicas change) and outcome (ok, refused, unreachable).',
    ['op', 'outcome'],
  );
  return {
    onFastPathPeerCall: (op: string, outcome: string): void => peerCalls.inc({ op, outcome }),
    onClaim: (outcome: string, seconds: number, how: ClaimHow): void => {
      claims.inc({ outcome, ...how });
      claimSeconds.observe({ outcome, ...how }, seconds);
    },
    onRecord: (outcome: string): void => records.inc({ outcome }),
    onOrphan: (outcome: string): void => orphans.inc({ outcome }),
    onAddressRefused: (reason: string): void => refused.inc({ reason }),
    onRenewal: (outcome: 'renewed' | 'lost' | 'deferred' | 'error'): void => renewals.inc({ outcome }),
    onFastPath: (code: number): void => fastPath.inc({ code: String(code) }),
  };
}

/** Launch types as upstream labels them: a pre-booted VM (warm), one booted for the claim (cold), or not known to this replica. */
export type LaunchType = 'warm' | 'cold' | 'unknown';

/** Upstream's claim latency buckets (milliseconds, 100 ms to 4 minutes), kept so its dashboards' bucket queries read the same. */
export const UPSTREAM_CLAIM_LATENCY_BUCKETS_MS = [
  100, 250, 500, 750, 1000, 1250, 1500, 2000, 2500, 5000, 10000, 30000, 60000, 120000, 240000,
];

/** created_by values upstream keeps (its clients and controller); any other value reads `unknown`, which keeps the label bounded. */
const CREATED_BY = new Set(['go-client', 'python-client', 'controller']);

export function normalizeCreatedBy(value: string | undefined): string {
  return value !== undefined && CREATED_BY.has(value) ? value : 'unknown';
}

/** Owners whose sandbox belongs to a SandboxClaim (a fast-path delivery's claim is written after the VM is handed over). */
const CLAIM_OWNERS: ReadonlySet<string> = new Set([OWNER_KINDS.claim, OWNER_KINDS.fastclaim]);

/** Reason of a claim's Bound=False while a node boots a VM for it (the claim reconciler's ColdStart). */
const COLD_START_REASON = 'ColdStart';

/** What the upstream-named metrics read: the claim-controller's caches and whether this replica leads. */
export interface UpstreamMetricSources {
  claims: { get(namespace: string, name: string): SandboxClaim | undefined };
  pools: { get(namespace: string, name: string): SandboxWarmPool | undefined };
  inventories: () => readonly NodeInventory[];
  /** Only the leader reports the sandbox gauge: every replica caches the same inventories, so a sum over replicas would count each sandbox twice. */
  isLeader: () => boolean;
  now?: () => number;
}

/** How long a delivery's launch type is kept while no inventory lists its sandbox (nodes publish on an interval). */
const LAUNCH_MEMORY_MS = 10 * 60_000;

/** The claim as it was before its Bound record: a Bound=False ColdStart means a VM was booted for it. */
function launchTypeOf(claim: SandboxClaim, fastPath: boolean): LaunchType {
  if (fastPath) return 'warm';
  const bound = claim.status?.conditions?.find((c) => c.type === CONDITION_TYPES.bound);
  return bound?.reason === COLD_START_REASON ? 'cold' : 'warm';
}

type SandboxLabels = 'namespace' | 'ready_condition' | 'expired' | 'launch_type' | 'sandbox_template' | 'owned_by' | 'created_by';

/**
 * kubernetes-sigs/agent-sandbox's metrics under its names, labels and buckets, so its HPA/KEDA
 * recipes and dashboards read this control plane unchanged:
 * - agent_sandbox_claim_creation_total: once per claim, by the replica that wrote its Bound
 *   record (the leader for SandboxClaims, the serving replica for fast-path claims), so the sum
 *   over replicas is the cluster's count and its rate per warmpool_name is a pool's claim rate;
 * - agent_sandbox_claim_startup_latency_ms: SandboxClaim objects, creation to Bound, the leader;
 * - agent_sandboxes: the leader only; what `kubectl get sandboxes -A` lists.
 */
export function upstreamClaimMetrics(registry: Registry, src: UpstreamMetricSources) {
  const now = src.now ?? Date.now;
  const creations = counter(
    registry,
    'agent_sandbox_claim_creation_total',
    "Claims handed a sandbox (agent-sandbox's name and labels), by namespace, sandbox_template, launch_type (warm, cold), warmpool_name, pod_condition (ready: a node hands over a running VM) and created_by. Counted once per claim by the replica that recorded it Bound (the leader for SandboxClaims, the serving replica for fast-path claims): sum over replicas.",
    ['namespace', 'sandbox_template', 'launch_type', 'warmpool_name', 'pod_condition', 'created_by'],
  );
  const latency = histogram(
    registry,
    'agent_sandbox_claim_startup_latency_ms',
    'SandboxClaim creation to Bound and Ready in milliseconds (agent-sandbox\'s name, labels and buckets), by launch_type and sandbox_template; from metadata.creationTimestamp, which has one-second precision, so an observation reads up to 1000 ms long. Observed by the leader, which binds SandboxClaims; fast-path claims are written already Bound and are timed by sandbox_scale_claim_controller_claim_duration_seconds{path="fast"}.',
    ['launch_type', 'sandbox_template'],
    UPSTREAM_CLAIM_LATENCY_BUCKETS_MS,
  );
  // sandbox id (sb_...) -> launch type of the delivery this replica recorded; labels the live sandboxes of the gauge
  const launched = new Map<string, { type: LaunchType; at: number }>();
  const templateOf = (namespace: string, pool: string): string => src.pools.get(namespace, pool)?.spec.sandboxTemplateRef.name || 'unknown';
  const labelsOf = (node: string, entry: InventoryEntry, t: number): Record<SandboxLabels, string> => {
    const owner = parseOwnerRef(entry.claimRef);
    const claimOwner = owner !== undefined && owner.kind !== 'legacy' && CLAIM_OWNERS.has(owner.kind) ? owner : undefined;
    const claim = claimOwner ? src.claims.get(claimOwner.namespace, claimOwner.name) : undefined;
    const deadline = entry.deadline ? Date.parse(entry.deadline) : Number.NaN;
    const known = entry.id ? launched.get(entry.id)?.type : undefined;
    return {
      namespace: splitEntryName(entry.name).namespace,
      ready_condition: readyConditionFor(node, entry.phase).status === CONDITION_STATUS.true ? 'true' : 'false',
      expired: Number.isFinite(deadline) && deadline <= t ? 'true' : 'false',
      launch_type: known ?? (claimOwner?.kind === OWNER_KINDS.fastclaim ? 'warm' : 'unknown'),
      sandbox_template: claim ? templateOf(claim.metadata.namespace ?? '', claim.spec.warmPoolRef.name) : 'unknown',
      owned_by: claimOwner ? 'SandboxClaim' : 'None',
      created_by: normalizeCreatedBy(claim?.metadata.labels?.[UPSTREAM_LABELS.createdBy]),
    };
  };
  new Gauge<SandboxLabels>({
    name: 'agent_sandboxes',
    help: "Live sandboxes (agent-sandbox's name and labels): what `kubectl get sandboxes -A` lists, by namespace, ready_condition, expired, launch_type (warm, cold; unknown: recorded before this replica led), sandbox_template, owned_by (SandboxClaim, None) and created_by. Reported by the leading claim-controller only (every replica caches the same inventories); warm VMs not yet claimed are not Sandboxes (sandbox_scale_warmpool_driver_pool_warm_replicas counts them).",
    labelNames: ['namespace', 'ready_condition', 'expired', 'launch_type', 'sandbox_template', 'owned_by', 'created_by'],
    registers: [registry],
    collect() {
      this.reset();
      if (!src.isLeader()) return;
      const t = now();
      const live = new Set<string>();
      for (const inv of src.inventories())
        for (const entry of inv.entries ?? []) {
          if (entry.id) live.add(entry.id);
          this.inc(labelsOf(inv.node, entry, t));
        }
      for (const [id, l] of launched) if (!live.has(id) && t - l.at > LAUNCH_MEMORY_MS) launched.delete(id);
    },
  });
  return {
    /** A claim was recorded Bound to `a`, once per claim on the replica that wrote the record; `claim` as it was before the record. */
    onClaimBound: (claim: SandboxClaim, a: Assignment, fastPath: boolean): void => {
      const namespace = claim.metadata.namespace ?? '';
      const pool = claim.spec.warmPoolRef.name;
      const sandboxTemplate = templateOf(namespace, pool);
      const launchType = launchTypeOf(claim, fastPath);
      const t = now();
      launched.set(a.claimId, { type: launchType, at: t });
      creations.inc({
        namespace,
        sandbox_template: sandboxTemplate,
        launch_type: launchType,
        warmpool_name: pool,
        pod_condition: 'ready',
        created_by: normalizeCreatedBy(claim.metadata.labels?.[UPSTREAM_LABELS.createdBy]),
      });
      const created = Date.parse(claim.metadata.creationTimestamp ?? '');
      if (!fastPath && Number.isFinite(created))
        latency.observe({ launch_type: launchType, sandbox_template: sandboxTemplate }, Math.max(0, t - created));
    },
  };
}
