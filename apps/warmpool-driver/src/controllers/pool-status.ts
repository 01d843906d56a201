import {
  CONDITION_STATUS,
  CONDITION_TYPES,
  formatRfc3339Seconds,
  poolKeyId,
  warmPoolSelector,
  type Condition,
  type PoolKey,
  type RecordedPoolKey,
  type SandboxWarmPoolStatus,
} from '@sandbox-scale/scale-core';
import type { ReplicaAllotment } from '../targets/replica-limits';

/** Reasons of the pool's Ready, Degraded and ReplicasLimited conditions. */
export const POOL_REASONS = {
  warm: 'PoolWarm',
  warming: 'PoolWarming',
  /** Ready=False: as many are warm as the limits allow, fewer than spec.replicas. */
  replicasOverLimit: 'ReplicasOverLimit',
  /** ReplicasLimited=True: spec.replicas is over --max-replicas-per-pool. */
  overPoolLimit: 'ReplicasOverPoolLimit',
  /** ReplicasLimited=True: the namespace's older pools leave this one less than spec.replicas of --max-replicas-per-namespace. */
  overNamespaceLimit: 'ReplicasOverNamespaceLimit',
  withinLimits: 'WithinLimits',
  noRoutableNodes: 'NoRoutableNodes',
  asExpected: 'AsExpected',
  templateNotFound: 'TemplateNotFound',
  templateInvalid: 'TemplateInvalid',
  fleetTokenMissing: 'FleetTokenMissing',
  pushFailed: 'PushFailed',
  invalidSpec: 'InvalidSpec',
} as const;

/** Why a pool is Degraded this sync: its targets could not all be driven. */
export interface PoolProblem {
  reason: (typeof POOL_REASONS)[keyof typeof POOL_REASONS];
  message: string;
}

export interface PoolObservation {
  name: string;
  generation?: number;
  /** spec.replicas. */
  replicas: number;
  /** What the limits let the nodes keep warm for it (absent: no limits, spec.replicas). */
  allotment?: ReplicaAllotment;
  /** Warm VMs of the pool's normalised key, summed over routable nodes. */
  warm: number;
  routableNodes: number;
  problem?: PoolProblem;
  now: Date;
  /** The key the pool is kept warm on (absent: none was ever resolved). */
  poolKey?: PoolKey;
  /** The previous key while it retires after a template change. */
  retiringPoolKey?: PoolKey;
}

type ConditionCore = Pick<Condition, 'type' | 'status' | 'reason' | 'message'>;

/** What the nodes are asked to keep warm for the pool. */
const targetOf = (o: PoolObservation): number => o.allotment?.target ?? o.replicas;

function readyOf(o: PoolObservation): ConditionCore {
  const base = { type: CONDITION_TYPES.ready };
  const target = targetOf(o);
  const limited = target < o.replicas;
  if (o.warm >= target && limited)
    // Not Ready: the pool will not hold what its spec asks for, however long one waits.
    return {
      ...base,
      status: CONDITION_STATUS.false,
      reason: POOL_REASONS.replicasOverLimit,
      message: `${o.warm} warm sandboxes, the most the replica limits allow of spec.replicas ${o.replicas} (see ReplicasLimited)`,
    };
  if (o.warm >= target)
    return {
      ...base,
      status: CONDITION_STATUS.true,
      reason: POOL_REASONS.warm,
      message: `${o.warm} warm sandboxes for ${o.replicas} replicas`,
    };
  if (o.routableNodes === 0)
    return {
      ...base,
      status: CONDITION_STATUS.false,
      reason: POOL_REASONS.noRoutableNodes,
      message: 'no node publishes a routable NodeInventory (address set, not stale or draining)',
    };
  return {
    ...base,
    status: CONDITION_STATUS.false,
    reason: POOL_REASONS.warming,
    message: limited
      ? `${o.warm} of ${target} warm over ${o.routableNodes} nodes (spec.replicas ${o.replicas} is limited to ${target}, see ReplicasLimited)`
      : `${o.warm} of ${o.replicas} warm over ${o.routableNodes} nodes`,
  };
}

/** ReplicasLimited: which limit holds the pool below spec.replicas, naming the field, the limit and its flag. */
function limitedOf(o: PoolObservation): ConditionCore {
  const base = { type: CONDITION_TYPES.replicasLimited };
  const a = o.allotment;
  if (a?.limitedBy === 'pool')
    return {
      ...base,
      status: CONDITION_STATUS.true,
      reason: POOL_REASONS.overPoolLimit,
      message: `spec.replicas ${a.requested} is over the per-pool limit ${a.limits.perPool} (warmpool-driver --max-replicas-per-pool); ${a.target} are kept warm`,
    };
  if (a?.limitedBy === 'namespace')
    return {
      ...base,
      status: CONDITION_STATUS.true,
      reason: POOL_REASONS.overNamespaceLimit,
      message:
        `spec.replicas ${a.requested} is over what the per-namespace limit ${a.limits.perNamespace} (warmpool-driver --max-replicas-per-namespace) leaves this pool: ` +
        `the namespace's pools created before it hold ${a.takenBefore}; ${a.target} are kept warm`,
    };
  const within = [
    ...(a && a.limits.perPool > 0 ? [`the per-pool limit ${a.limits.perPool}`] : []),
    ...(a && a.limits.perNamespace > 0 ? [`the per-namespace limit ${a.limits.perNamespace}`] : []),
  ];
  return {
    ...base,
    status: CONDITION_STATUS.false,
    reason: POOL_REASONS.withinLimits,
    message:
      within.length > 0
        ? `spec.replicas ${o.replicas} is kept warm in full, within ${within.join(' and ')}`
        : `spec.replicas ${o.replicas} is kept warm in full (no replica limit is set)`,
  };
}

function degradedOf(o: PoolObservation): ConditionCore {
  const base = { type: CONDITION_TYPES.degraded };
  if (o.problem) return { ...base, status: CONDITION_STATUS.true, reason: o.problem.reason, message: o.problem.message };
  return { ...base, status: CONDITION_STATUS.false, reason: POOL_REASONS.asExpected, message: 'every routable node holds its warm target' };
}

/** A condition keeps its transition time while its status stays the same. */
export function withTransitionTimes(
  next: readonly ConditionCore[],
  current: readonly Condition[] | undefined,
  now: Date,
  generation?: number,
): Condition[] {
  return next.map((c) => {
    const prev = current?.find((p) => p.type === c.type);
    const lastTransitionTime = prev && prev.status === c.status ? prev.lastTransitionTime : formatRfc3339Seconds(now);
    return { ...c, lastTransitionTime, ...(generation !== undefined ? { observedGeneration: generation } : {}) };
  });
}

/** The status this driver owns for one pool, observedGeneration and conditions included. */
export function desiredPoolStatus(o: PoolObservation, current: SandboxWarmPoolStatus | undefined): SandboxWarmPoolStatus {
  const warm = Math.max(0, Math.min(o.warm, 2_147_483_647));
  return {
    replicas: warm,
    readyReplicas: warm,
    selector: warmPoolSelector(o.name),
    ...(o.generation !== undefined ? { observedGeneration: o.generation } : {}),
    conditions: withTransitionTimes([readyOf(o), degradedOf(o), limitedOf(o)], current?.conditions, o.now, o.generation),
    ...(o.poolKey ? { poolKey: recorded(o.poolKey) } : {}),
    ...(o.retiringPoolKey ? { retiringPoolKey: recorded(o.retiringPoolKey) } : {}),
  };
}

const recorded = (k: PoolKey): RecordedPoolKey => ({ template: k.template, net: k.net, size: k.size });
const idOrNone = (k: RecordedPoolKey | undefined): string => (k ? poolKeyId(k) : '');

/** Whether two statuses record the same keys (a key change is written before the nodes are told). */
export function sameRecordedKeys(a: SandboxWarmPoolStatus | undefined, b: SandboxWarmPoolStatus | undefined): boolean {
  return idOrNone(a?.poolKey) === idOrNone(b?.poolKey) && idOrNone(a?.retiringPoolKey) === idOrNone(b?.retiringPoolKey);
}

/** Status for a pool that does not parse: Ready=False and Degraded=True, naming the field. */
export function invalidPoolStatus(
  name: string,
  fieldPath: string,
  message: string,
  current: SandboxWarmPoolStatus | undefined,
  now: Date,
): SandboxWarmPoolStatus {
  const text = `${fieldPath || 'object'}: ${message}`.slice(0, 4096);
  return {
    selector: warmPoolSelector(name),
    conditions: withTransitionTimes(
      [
        { type: CONDITION_TYPES.ready, status: CONDITION_STATUS.false, reason: POOL_REASONS.invalidSpec, message: text },
        { type: CONDITION_TYPES.degraded, status: CONDITION_STATUS.true, reason: POOL_REASONS.invalidSpec, message: text },
      ],
      current?.conditions,
      now,
    ),
    // The record of what the nodes keep warm outlives a bad edit: it is what a restarted driver reads.
    ...(current?.poolKey ? { poolKey: current.poolKey } : {}),
    ...(current?.retiringPoolKey ? { retiringPoolKey: current.retiringPoolKey } : {}),
  };
}

const comparable = (s: SandboxWarmPoolStatus | undefined): string =>
  JSON.stringify({
    replicas: s?.replicas,
    readyReplicas: s?.readyReplicas,
    selector: s?.selector,
    observedGeneration: s?.observedGeneration,
    conditions: (s?.conditions ?? []).map((c) => [c.type, c.status, c.reason, c.message, c.lastTransitionTime]).sort(),
    poolKey: idOrNone(s?.poolKey),
    retiringPoolKey: idOrNone(s?.retiringPoolKey),
  });

/** Whether writing `desired` would change what the API server holds (diff before write). */
export function statusDiffers(current: SandboxWarmPoolStatus | undefined, desired: SandboxWarmPoolStatus): boolean {
  return comparable(current) !== comparable(desired);
}

/**
 * Conditions whose status or reason changes between current and desired: what deserves an Event.
 * A reason change counts, so a pool already Degraded (say PushFailed) that loses its template
 * still gets a TemplateNotFound event; a message-only change (a count) does not.
 */
export function transitions(current: SandboxWarmPoolStatus | undefined, desired: SandboxWarmPoolStatus): Condition[] {
  return (desired.conditions ?? []).filter((c) => {
    const prev = current?.conditions?.find((p) => p.type === c.type);
    return prev?.status !== c.status || prev.reason !== c.reason;
  });
}

/** An Event worth recording for a condition change (events.k8s.io). */
export interface PoolEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  note: string;
}

/** Ready is bad when False; Degraded and ReplicasLimited when True. */
const isBad = (c: Condition): boolean =>
  c.type === CONDITION_TYPES.ready ? c.status !== CONDITION_STATUS.true : c.status === CONDITION_STATUS.true;

/**
 * The Events of a status change: one per transition, except ReplicasLimited first appearing
 * False, which says nothing new (every pool within its limits, and each pool written before the
 * condition existed, would otherwise get one).
 */
export function poolEvents(current: SandboxWarmPoolStatus | undefined, desired: SandboxWarmPoolStatus): PoolEvent[] {
  return transitions(current, desired)
    .filter(
      (c) =>
        !(
          c.type === CONDITION_TYPES.replicasLimited &&
          c.status === CONDITION_STATUS.false &&
          !current?.conditions?.some((p) => p.type === c.type)
        ),
    )
    .map((c) => ({ type: isBad(c) ? 'Warning' : 'Normal', reason: c.reason, note: c.message }));
}
