import type { KubeConfig } from '@kubernetes/client-node';
import { createInformer, type Informer, type KubeResource, type Logger } from '@sandbox-scale/kube-runtime';
import {
  CONDITION_STATUS,
  CONDITION_TYPES,
  formatOwnerRef,
  OWNER_KINDS,
  parseObject,
  RESOURCES,
  SANDBOX_PHASES,
  SandboxClaimSchema,
  servedObjectName,
  synthesizeSandbox,
  type InventoryEntry,
  type OwnerRefKey,
} from '@sandbox-scale/scale-core';
import type { Registry } from 'prom-client';
import type { SandboxCache } from './sandbox-cache';

export const SANDBOX_CLAIM_RESOURCE: KubeResource = RESOURCES.sandboxClaim;

/**
 * What the follower keeps of a SandboxClaim: the fields that say which sandbox it holds and
 * whether it is Ready. Only these are cached, so a replica holds a few hundred bytes per claim,
 * not the whole object.
 */
export interface FollowedClaim {
  readonly metadata: { readonly name: string; readonly namespace: string; readonly uid: string; readonly resourceVersion?: string };
  /** The served Sandbox's name (status.sandbox.name), '' when unbound. */
  readonly sandboxName: string;
  readonly claimId: string;
  readonly node: string;
  readonly address: string;
  readonly deadline: string;
  /** lastTransitionTime of Ready=True, '' when the claim is not Ready. */
  readonly readySince: string;
}

/** A SandboxClaim, as the follower keeps it; throws (naming the field) when the claim does not parse. */
export function followedClaimOf(obj: unknown): FollowedClaim {
  const c = parseObject(SandboxClaimSchema, obj);
  const sb = c.status?.sandbox ?? {};
  const ready = c.status?.conditions?.find((k) => k.type === CONDITION_TYPES.ready && k.status === CONDITION_STATUS.true);
  // a status written before the claim id had a field of its own held it in `name` (a claim name never holds `_`)
  const legacyId = sb.name?.includes('_') === true;
  const name = c.metadata.name ?? '';
  return {
    metadata: {
      name,
      namespace: c.metadata.namespace ?? '',
      uid: c.metadata.uid ?? '',
      ...(c.metadata.resourceVersion ? { resourceVersion: c.metadata.resourceVersion } : {}),
    },
    sandboxName: legacyId ? servedObjectName(name) : (sb.name ?? ''),
    claimId: sb.claimID ?? (legacyId ? (sb.name ?? '') : ''),
    node: sb.nodeName ?? '',
    address: sb.address ?? '',
    deadline: sb.deadline ?? '',
    readySince: ready ? (ready.lastTransitionTime ?? '') : '',
  };
}

/**
 * The inventory entry a Ready claim stands for, the way its node will publish it: served under
 * the claim's namespace and the name in status.sandbox.name, owned by the claim. Undefined for
 * a claim that is not Ready, names no sandbox, or turned Ready longer than `windowMs` ago (its
 * node has published since, or no longer has the sandbox: the claim's word is stale by then).
 */
export function entryOfClaim(
  c: FollowedClaim,
  now: Date,
  windowMs: number,
  refKey: OwnerRefKey,
): { node: string; entry: InventoryEntry } | undefined {
  if (c.readySince === '' || c.claimId === '' || c.node === '' || c.sandboxName === '' || c.metadata.uid === '') return undefined;
  const since = Date.parse(c.readySince);
  if (!Number.isFinite(since) || now.getTime() - since > windowMs) return undefined;
  const owner = { kind: OWNER_KINDS.claim, uid: c.metadata.uid, namespace: c.metadata.namespace, name: c.metadata.name };
  const entry: InventoryEntry = {
    name: `${c.metadata.namespace}/${c.sandboxName}`,
    id: c.claimId,
    phase: SANDBOX_PHASES.running,
    // the reference claim-controller wrote on the node for this claim (the same key proves both)
    claimRef: formatOwnerRef(owner, refKey),
    claimedAt: c.readySince,
    ...(c.address !== '' ? { addr: c.address } : {}),
    ...(c.deadline !== '' ? { deadline: c.deadline } : {}),
  };
  return { node: c.node, entry };
}

export interface ClaimFollowerOptions {
  readonly cache: SandboxCache;
  /** How long after a claim turned Ready its status is still served in place of its node's publish. */
  readonly windowMs: number;
  /** The key claim-controller proves its references with (its entries are stood in for with the same reference). */
  readonly refKey: OwnerRefKey;
  readonly now?: () => Date;
}

/**
 * Serves a claim's Sandbox from the claim's status from the moment the claim is Ready until
 * its node publishes the sandbox (the cache's created-overlay, as for a Sandbox created here),
 * so a client that waits for the claim and then for the Sandbox never waits a publish interval.
 * A deleted claim's sandbox is hidden at once: claim-controller released it before the claim went.
 */
export class ClaimFollower {
  constructor(private readonly o: ClaimFollowerOptions) {}

  upsert(c: FollowedClaim): void {
    const found = entryOfClaim(c, (this.o.now ?? (() => new Date()))(), this.o.windowMs, this.o.refKey);
    if (found === undefined) return;
    const { node, entry } = found;
    const row = this.o.cache.get(c.metadata.namespace, c.sandboxName);
    if (row !== undefined && row.entry.id === entry.id) return;
    this.o.cache.addCreated(node, entry, synthesizeSandbox(node, entry, { resourceVersion: '0', fallbackCreationTimestamp: c.readySince }));
  }

  remove(c: FollowedClaim): void {
    if (c.claimId === '' || c.sandboxName === '') return;
    this.o.cache.markReleased(c.metadata.namespace, c.sandboxName, c.claimId);
  }
}

/** Follows every SandboxClaim (list, then watch) into `follower`; started once the inventory cache is synced. */
export function startClaimFollower(kc: KubeConfig, follower: ClaimFollower, log: Logger, registry?: Registry): Informer<FollowedClaim> {
  const informer = createInformer<FollowedClaim>(kc, {
    resource: SANDBOX_CLAIM_RESOURCE,
    parse: followedClaimOf,
    log,
    ...(registry ? { registry } : {}),
  });
  informer.on({
    add: (c) => follower.upsert(c),
    update: (c) => follower.upsert(c),
    delete: (c) => follower.remove(c),
  });
  informer.start();
  return informer;
}
