import type { z } from 'zod';
import type { CheckpointClaimBodySchema, ClaimBodySchema, ForkBodySchema } from '@sandbox-scale/sandboxd-client';
import { ApiError, provisioningFailed, quotaReached, unknownCheckpoint, unknownTemplate } from './api-error';
import { sandboxByBodyToken, tenantOf, type Caller } from './auth';
import { sleep } from './clock';
import type { NodeState } from './node-state';
import { ARCHIVED, RUNNING, Sandbox, grantTtl } from './sandbox';
import type { SimKey } from './wire-key';

export type ClaimBody = z.output<typeof ClaimBodySchema>;
export type CheckpointClaimBody = z.output<typeof CheckpointClaimBodySchema>;
export type ForkBody = z.output<typeof ForkBodySchema>;

/** A claim either hands over a sandbox or points at peers ("try there"). */
export type ClaimOutcome = { kind: 'claim'; sandbox: Sandbox } | { kind: 'redirect'; to: string[]; requirePromoted: boolean };

type Tier = 'warm' | 'clone' | 'cold';

interface Grant {
  key: SimKey;
  tenant: string | undefined;
  ttlSeconds: number | null | undefined;
  claimRef: string | undefined;
  fromCheckpoint: string | undefined;
  templateDigest: string | undefined;
  tier: Tier;
  startedAt: number;
}

const redirect = (to: string[], requirePromoted = false): ClaimOutcome => ({ kind: 'redirect', to, requirePromoted });

function requireEgressLane(node: NodeState, key: SimKey): void {
  if (key.net === 'egress' && !node.config.egress) throw new ApiError(409, 'egress lane not available on this node');
}

/**
 * Admission is checked again when the claim is recorded: concurrent provisions may all have
 * started, and the losers are destroyed with 429.
 */
function commit(node: NodeState, g: Grant): ClaimOutcome {
  const refused = node.refusal(g.tenant);
  if (refused) throw quotaReached(refused);
  const sb = new Sandbox({
    id: node.newSandboxId(),
    token: node.newToken(),
    key: g.key,
    tenant: g.tenant,
    claimRef: g.claimRef || undefined,
    fromCheckpoint: g.fromCheckpoint,
    templateDigest: g.templateDigest,
    ttlS: grantTtl(g.ttlSeconds, node.config.defaultTtlSeconds),
    now: node.now(),
  });
  node.add(sb);
  node.metrics.countClaim(g.tier, (node.now() - g.startedAt) / 1000);
  return { kind: 'claim', sandbox: sb };
}

/** `POST /v1/claim`, in the daemon's order of decisions. */
export async function claim(node: NodeState, caller: Caller, body: ClaimBody): Promise<ClaimOutcome> {
  const startedAt = node.now();
  const key = node.keys.parse(body.template, body.net, body.size);
  requireEgressLane(node, key);
  const tenant = tenantOf(caller);
  const noRedirect = body.no_redirect === true;
  const refused = node.refusal(tenant);
  if (refused) {
    const peers = noRedirect ? [] : (node.mesh?.warmPeers(key) ?? []);
    if (peers.length > 0) return redirect(peers);
    throw quotaReached(refused);
  }
  const pool = node.pools.get(key);
  pool?.recordClaim(startedAt);
  const template = node.lineage.templates.get(key.id);
  if (body.require_promoted && template === undefined) throw unknownTemplate();
  const grant = { key, tenant, ttlSeconds: body.ttl_seconds, claimRef: body.claim_ref ?? undefined, fromCheckpoint: undefined, startedAt };
  if (!body.require_promoted && node.pools.pop(key)) {
    if (pool) node.pools.refill(pool);
    return commit(node, { ...grant, templateDigest: undefined, tier: 'warm' });
  }
  const hasPoolGolden = pool?.golden === true && !body.require_promoted;
  if (!noRedirect && node.mesh) {
    const warmPeers = node.mesh.warmPeers(key);
    if (warmPeers.length > 0) return redirect(warmPeers);
    const owners = hasPoolGolden || template ? [] : node.mesh.templateOwners(key);
    if (owners.length > 0) return redirect(owners.slice(0, 2));
  }
  if (pool) node.pools.refill(pool);
  const tier: Tier = hasPoolGolden || template ? 'clone' : 'cold';
  await node.provision(key, tier);
  const templateDigest = !hasPoolGolden && template ? template.digest : undefined;
  return commit(node, { ...grant, templateDigest, tier });
}

/** `POST /v1/checkpoints/{id}/claim`: a branch of the checkpoint under its recorded key. */
export async function claimCheckpoint(node: NodeState, caller: Caller, id: string, body: CheckpointClaimBody): Promise<ClaimOutcome> {
  const startedAt = node.now();
  const rec = node.lineage.checkpoints.get(id);
  if (rec === undefined) {
    const owners = body.no_redirect || !node.mesh ? [] : await node.mesh.checkpointOwners(id);
    if (owners.length > 0) return redirect(owners.slice(0, 3));
    throw unknownCheckpoint();
  }
  if (rec.key.net === 'egress') throw new ApiError(409, 'egress-lane checkpoints cannot be claimed');
  const tenant = tenantOf(caller);
  const refused = node.refusal(tenant);
  if (refused) throw quotaReached(refused);
  await node.provision(rec.key, 'clone');
  const outcome = commit(node, {
    key: rec.key,
    tenant,
    ttlSeconds: body.ttl_seconds,
    claimRef: body.claim_ref ?? undefined,
    fromCheckpoint: rec.id,
    templateDigest: undefined,
    tier: 'clone',
    startedAt,
  });
  if (outcome.kind === 'claim') await startFromCheckpoint(node, rec.id, outcome.sandbox);
  return outcome;
}

/** The claim's root starts as the checkpoint's copy; a claim that cannot get it is destroyed. */
async function startFromCheckpoint(node: NodeState, checkpointId: string, sb: Sandbox): Promise<void> {
  try {
    await node.dataPlane?.roots.restoreCheckpoint(checkpointId, sb.id);
  } catch (err) {
    node.dataPlane?.logger.error({ err, sandboxId: sb.id }, 'checkpoint files could not be restored');
    node.remove(sb);
    throw provisioningFailed();
  }
}

/** Each child gets a copy of the parent's files; all or nothing, as the fork itself. */
async function copyToChildren(node: NodeState, parent: Sandbox, children: readonly Sandbox[]): Promise<void> {
  const dp = node.dataPlane;
  if (dp === undefined) return;
  try {
    await Promise.all(children.map((c) => dp.roots.copyRoot(parent.id, c.id)));
  } catch (err) {
    dp.logger.error({ err, sandboxId: parent.id }, 'fork could not copy the parent files');
    for (const c of children) node.remove(c);
    throw new ApiError(500, 'fork failed');
  }
}

/** `POST /v1/sandboxes/{id}/fork`: all `count` children or none. */
export async function fork(node: NodeState, caller: Caller, id: string, body: ForkBody): Promise<Sandbox[]> {
  const count = body.count ?? 0;
  if (count < 1 || count > node.config.maxForkCount) throw new ApiError(400, 'invalid fork count');
  const parent = sandboxByBodyToken(node, caller, body.token ?? '', id);
  if (parent.key.net === 'egress') throw new ApiError(409, 'egress-lane sandboxes do not fork');
  if (parent.state === ARCHIVED) throw new ApiError(409, 'sandbox is archived');
  // Children belong to the parent's tenant, whoever calls, and must all fit at once.
  const refused = node.refusal(parent.tenant, count);
  if (refused) throw quotaReached(refused);
  // A running parent pauses for the snapshot; a hibernated one forks from its image.
  await sleep(node.clock, parent.state === RUNNING ? node.latency.sample('hibernate') : 0);
  const clones = await Promise.allSettled(Array.from({ length: count }, () => node.provision(parent.key, 'clone')));
  if (clones.some((c) => c.status === 'rejected')) throw new ApiError(500, 'fork failed');
  const again = node.refusal(parent.tenant, count);
  if (again) throw quotaReached(again);
  const ttlS = grantTtl(body.ttl_seconds, node.config.defaultTtlSeconds);
  const children: Sandbox[] = [];
  for (let i = 0; i < count; i++) {
    const childId = node.newSandboxId();
    const child = new Sandbox({
      id: childId,
      token: node.newToken(),
      key: parent.key,
      tenant: parent.tenant,
      claimRef: body.claim_ref_prefix ? body.claim_ref_prefix + childId : undefined,
      fromCheckpoint: undefined,
      templateDigest: undefined,
      ttlS,
      now: node.now(),
    });
    node.add(child);
    children.push(child);
  }
  await copyToChildren(node, parent, children);
  node.metrics.forks++;
  return children;
}
