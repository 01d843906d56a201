import type { z } from 'zod';
import type { CheckpointBodySchema, PromoteBodySchema } from '@sandbox-scale/sandboxd-client';
import { ApiError, unknownCheckpoint, unknownSandbox, unknownTemplate } from './api-error';
import { sandboxByBodyToken, tenantOf, visibleTo, type Caller } from './auth';
import { sleep } from './clock';
import type { CheckpointRecord, TemplateRecord } from './lineage';
import type { NodeState } from './node-state';
import { ARCHIVED, HIBERNATED, RUNNING, grantTtl, type Sandbox } from './sandbox';
import { NAME_RE, type SimKey } from './wire-key';

export type PromoteBody = z.output<typeof PromoteBodySchema>;
export type CheckpointBody = z.output<typeof CheckpointBodySchema>;

/** After an await the sandbox may have been released or reaped meanwhile. */
function stillLive(node: NodeState, sb: Sandbox): void {
  if (node.findSandbox(sb.id) !== sb) throw unknownSandbox();
}

/** Destroys the VM; the claim stops counting at once (teardown delay is invisible). */
export async function release(node: NodeState, sb: Sandbox): Promise<void> {
  node.remove(sb);
  node.metrics.releases++;
  // the reply means the files are gone, as the VM's disk is
  await node.dataPlane?.removed(sb.id);
  await sleep(node.clock, node.latency.sample('release'));
}

export async function hibernate(node: NodeState, sb: Sandbox): Promise<void> {
  if (sb.key.net === 'egress') throw new ApiError(409, 'egress-lane sandboxes do not hibernate');
  if (sb.state !== RUNNING) return;
  await sleep(node.clock, node.latency.sample('hibernate'));
  stillLive(node, sb);
  if (!node.isRunning(sb)) return;
  node.setState(sb, HIBERNATED);
  node.metrics.hibernates++;
}

/** Hibernated: keeps its deadline. Archived: a fresh lease of the originally granted length. */
export async function wake(node: NodeState, sb: Sandbox): Promise<void> {
  if (sb.state === RUNNING) return;
  const fromArchive = sb.state === ARCHIVED;
  const ms = node.latency.sample('wake') + (fromArchive ? node.latency.sample('clone') : 0);
  await sleep(node.clock, ms);
  stillLive(node, sb);
  // Another wake may have finished while this one slept.
  if (node.isRunning(sb)) return;
  node.setState(sb, RUNNING);
  const now = node.now();
  sb.idleSince = now;
  if (fromArchive) {
    sb.deadline = now + sb.ttlS * 1000;
    node.metrics.unarchives++;
  }
  node.metrics.wakes++;
  node.metrics.wakeSeconds += ms / 1000;
}

/** Deadline = now + granted TTL (may shorten); the grant is also what a later unarchive gives. */
export function renew(node: NodeState, sb: Sandbox, ttlSeconds: number | null | undefined): number {
  if (sb.state === ARCHIVED) throw new ApiError(409, 'sandbox is archived');
  sb.ttlS = grantTtl(ttlSeconds, node.config.defaultTtlSeconds);
  sb.deadline = node.now() + sb.ttlS * 1000;
  return sb.deadline;
}

function requireCapturable(sb: Sandbox, verb: string): void {
  if (sb.key.net === 'egress') throw new ApiError(409, `egress-lane sandboxes do not ${verb}`);
  if (sb.state === ARCHIVED) throw new ApiError(409, 'sandbox is archived');
}

/** A running source pauses for the snapshot; a hibernated one is captured from its image. */
async function capture(node: NodeState, sb: Sandbox): Promise<void> {
  await sleep(node.clock, sb.state === RUNNING ? node.latency.sample('hibernate') : 0);
  stillLive(node, sb);
}

export async function promote(node: NodeState, caller: Caller, id: string, body: PromoteBody): Promise<TemplateRecord> {
  const name = body.template ?? '';
  if (!NAME_RE.test(name)) throw new ApiError(400, 'invalid template name');
  const sb = sandboxByBodyToken(node, caller, body.token ?? '', id);
  requireCapturable(sb, 'promote');
  const key = node.keys.intern(name, sb.key.net, sb.key.size);
  if (node.pools.get(key)) throw new ApiError(409, 'template belongs to a configured pool');
  const existing = node.lineage.templates.get(key.id);
  if (existing && caller.kind === 'tenant' && existing.tenant !== caller.tenant.name)
    throw new ApiError(409, 'template owned by another tenant');
  await capture(node, sb);
  node.metrics.promotes++;
  return node.lineage.promote(key, tenantOf(caller), sb.id);
}

export type TemplateDeleteOutcome = { kind: 'deleted' } | { kind: 'redirect'; to: string[] };

export function deleteTemplate(node: NodeState, caller: Caller, key: SimKey, noRedirect: boolean): TemplateDeleteOutcome {
  if (node.pools.get(key)) throw new ApiError(409, 'template belongs to a configured pool');
  const rec = node.lineage.templates.get(key.id);
  if (rec === undefined || !visibleTo(caller, rec.tenant)) {
    const owners = noRedirect || rec !== undefined || !node.mesh ? [] : node.mesh.templateOwners(key);
    if (owners.length > 0) return { kind: 'redirect', to: owners };
    throw unknownTemplate();
  }
  node.lineage.templates.delete(key.id);
  return { kind: 'deleted' };
}

export async function checkpoint(node: NodeState, caller: Caller, id: string, body: CheckpointBody): Promise<CheckpointRecord> {
  const name = body.name || undefined;
  if (name !== undefined && !NAME_RE.test(name)) throw new ApiError(400, 'invalid checkpoint name');
  const sb = sandboxByBodyToken(node, caller, body.token ?? '', id);
  requireCapturable(sb, 'checkpoint');
  await capture(node, sb);
  const rec: CheckpointRecord = {
    id: node.newCheckpointId(),
    name,
    sandboxId: sb.id,
    key: sb.key,
    tenant: tenantOf(caller),
    createdAt: node.now(),
  };
  await keepFiles(node, rec);
  node.lineage.addCheckpoint(rec);
  node.metrics.checkpoints++;
  return rec;
}

/** A checkpoint keeps a copy of the sandbox's files; one that cannot is not created. */
async function keepFiles(node: NodeState, rec: CheckpointRecord): Promise<void> {
  try {
    await node.dataPlane?.roots.keepCheckpoint(rec.sandboxId, rec.id);
  } catch (err) {
    node.dataPlane?.logger.error({ err, sandboxId: rec.sandboxId }, 'checkpoint could not copy the sandbox files');
    await node.dataPlane?.roots.dropCheckpoint(rec.id).catch(() => undefined);
    throw new ApiError(500, 'checkpoint failed');
  }
}

/** A tenant deletes only its own; anything else is 404, never a hint that it exists. */
export function deleteCheckpoint(node: NodeState, caller: Caller, id: string): void {
  const rec = node.lineage.checkpoints.get(id);
  if (rec === undefined || !visibleTo(caller, rec.tenant)) throw unknownCheckpoint();
  node.lineage.checkpoints.delete(id);
  node.dataPlane?.roots.dropCheckpoint(id).catch((err: unknown) => node.dataPlane?.logger.warn({ err }, 'checkpoint files removal failed'));
}
