import { randomUUID } from 'node:crypto';
import { AlreadyExistsError, ANNOTATIONS, BadRequestError, DNS1123_SUBDOMAIN, DNS1123_SUBDOMAIN_MAX_LENGTH, formatOwnerRef, formatRfc3339Seconds, OWNER_KINDS, SANDBOX_API_VERSION, StatusError, type ServedSandbox } from '@sandbox-scale/scale-core';
import type { Checkpoint, SandboxdClient } from '@sandbox-scale/sandboxd-client';
import { z } from 'zod';
import { listClaimed } from './claimed-listing';
import { SANDBOX_RESOURCE, type SandboxLocation, type SandboxStorage } from './sandbox-storage';
import { snapshotNotFound, snapshotStatusError, type SnapshotCallContext } from './snapshot-errors';

/** Options bodies; `kind`, `apiVersion` and `metadata` are tolerated (k8s-api.md §4.12). */
const SnapshotsOptionsSchema = z.looseObject({});
const DeleteSnapshotOptionsSchema = z.looseObject({ snapshot: z.string().min(1) });
const ClaimSnapshotOptionsSchema = z.looseObject({
  snapshot: z.string().min(1),
  name: z.string().min(1).max(DNS1123_SUBDOMAIN_MAX_LENGTH).regex(DNS1123_SUBDOMAIN, 'must be a lowercase RFC 1123 subdomain'),
  ttlSeconds: z.number().int().min(0).optional(),
});

/** The snapshot subresources, the options kind each accepts and the kind each answers with. */
export const SNAPSHOT_ACTIONS = {
  snapshots: { options: 'SandboxSnapshotsOptions', result: 'SandboxSnapshotList' },
  deletesnapshot: { options: 'SandboxDeleteSnapshotOptions', result: 'SandboxDeleteSnapshotResult' },
  claimsnapshot: { options: 'SandboxClaimSnapshotOptions', result: 'Sandbox' },
} as const;
export type SnapshotAction = keyof typeof SNAPSHOT_ACTIONS;

export function isSnapshotAction(action: string): action is SnapshotAction {
  return Object.hasOwn(SNAPSHOT_ACTIONS, action);
}

/** 400 naming every bad field, in the Status causes as kube does for a strict decode. */
function parseOptions<S extends z.ZodType>(action: SnapshotAction, schema: S, body: unknown): z.output<S> {
  const expected = SNAPSHOT_ACTIONS[action].options;
  const raw = body ?? {};
  if (typeof raw === 'object' && raw !== null && 'kind' in raw && raw.kind !== undefined && raw.kind !== expected) {
    throw new BadRequestError(`expected kind ${expected} for ${action}, got ${String(raw.kind)}`);
  }
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const causes = parsed.error.issues.map((i) => {
    const field = i.path.join('.') || '(body)';
    const missing = i.code === 'invalid_type' && (raw as Record<string, unknown>)[field] === undefined;
    return { reason: missing ? 'FieldValueRequired' : 'FieldValueInvalid', field, message: missing ? `${field}: Required value` : `${field}: ${i.message}` };
  });
  throw new StatusError('BadRequest', `the body is not a valid ${expected}: ${causes.map((c) => c.message).join(', ')}`, { causes });
}

/** What a list item says about one checkpoint; the id is the handle for delete and claim. */
function snapshotItem(cp: Checkpoint, node: string): Record<string, unknown> {
  return {
    snapshotID: cp.id,
    ...(cp.name ? { name: cp.name } : {}),
    sandboxID: cp.sandboxId,
    nodeName: node,
    pool: { template: cp.key.template, net: cp.key.net, size: cp.key.size },
    creationTimestamp: cp.createdAt ? formatRfc3339Seconds(cp.createdAt) : null,
  };
}

/**
 * The sandbox's checkpoints as subresources (issue 7: "snapshot; snapshots list/delete/claim").
 *
 * Design: every route is a POST under `sandboxes/{name}/…`, like pause/fork, rather than a new
 * `snapshots` resource, because:
 * - RBAC stays per sandbox: `create` on `sandboxes/claimsnapshot` in a namespace reaches only the
 *   checkpoints of that namespace's sandboxes (each is filtered by the sandbox's claim id), never
 *   another tenant's checkpoint on the same node, although sandboxd itself treats the id as a
 *   capability;
 * - custom subresources are reachable from kubectl only as `create --raw` (POST) and from
 *   client-go/client-node as a POST to a subresource (k8s-api.md §4.12), so one verb fits all;
 * - a real `snapshots` resource would need list/watch across nodes, which controllers would
 *   start consuming (§4.15); checkpoints are per-node records that we only read on demand.
 * The cost: the checkpoints of a deleted sandbox are no longer reachable here (they age out on
 * the node by `checkpoint_ttl_hours`).
 */
export class SnapshotStorage {

  constructor(private readonly storage: SandboxStorage) {}

  async act(namespace: string, name: string, action: SnapshotAction, body: unknown, dryRun: boolean): Promise<Record<string, unknown> | ServedSandbox> {
    switch (action) {
      case 'snapshots':
        parseOptions(action, SnapshotsOptionsSchema, body);
        return this.list(namespace, name);
      case 'deletesnapshot': {
        const o = parseOptions(action, DeleteSnapshotOptionsSchema, body);
        return this.remove(namespace, name, o.snapshot, dryRun);
      }
      default: {
        const o = parseOptions(action, ClaimSnapshotOptionsSchema, body);
        return this.claim(namespace, name, { snapshot: o.snapshot, name: o.name, ...(o.ttlSeconds ? { ttlSeconds: o.ttlSeconds } : {}) }, dryRun);
      }
    }
  }

  /** The `snapshot` action: checkpoint the sandbox in place (it keeps running). */
  async create(namespace: string, name: string, snapshotName: string | undefined, dryRun: boolean): Promise<Record<string, unknown>> {
    const loc = await this.#locate(namespace, name);
    if (dryRun) return { apiVersion: SANDBOX_API_VERSION, kind: 'SandboxSnapshotResult' };
    const ctx = { verb: 'snapshot', node: loc.node, id: loc.claimId };
    const client = this.#client(loc, ctx);
    const cp = await this.#call(ctx, () => client.checkpoint(loc.claimId, snapshotName ? { name: snapshotName } : {}, { signal: AbortSignal.timeout(30_000) }));
    return { apiVersion: SANDBOX_API_VERSION, kind: 'SandboxSnapshotResult', snapshotID: cp.id, ...(cp.name ? { name: cp.name } : {}), nodeName: loc.node, creationTimestamp: cp.createdAt ? formatRfc3339Seconds(cp.createdAt) : null };
  }

  /** This sandbox's checkpoints on its node, newest first (the node's order). */
  async list(namespace: string, name: string): Promise<Record<string, unknown>> {
    const loc = await this.#locate(namespace, name);
    const items = (await this.#checkpointsOf(loc)).map((cp) => snapshotItem(cp, loc.node));
    return { apiVersion: SANDBOX_API_VERSION, kind: 'SandboxSnapshotList', metadata: {}, items };
  }

  /** 404 when the sandbox has no such checkpoint (sandboxd itself treats a missing one as gone). */
  async remove(namespace: string, name: string, snapshot: string, dryRun: boolean): Promise<Record<string, unknown>> {
    const loc = await this.#locate(namespace, name);
    await this.#find(loc, namespace, name, snapshot);
    if (!dryRun) {
      const ctx = { verb: 'delete snapshot', node: loc.node, id: snapshot };
      const client = this.#client(loc, ctx);
      await this.#call(ctx, () => client.deleteCheckpoint(snapshot, { signal: AbortSignal.timeout(30_000) }));
    }
    return { apiVersion: SANDBOX_API_VERSION, kind: 'SandboxDeleteSnapshotResult', snapshotID: snapshot, nodeName: loc.node };
  }

  /**
   * A new sandbox `target.name` in the same namespace, branched from the checkpoint on the node
   * that holds it; listed at once like fork children. The token is in this response only.
   */
  async claim(namespace: string, name: string, target: { snapshot: string; name: string; ttlSeconds?: number }, dryRun: boolean): Promise<ServedSandbox | Record<string, unknown>> {
    if (this.storage.names.isTaken(namespace, target.name)) {
      throw new AlreadyExistsError(SANDBOX_RESOURCE, target.name);
    }
    const loc = await this.#locate(namespace, name);
    const cp = await this.#find(loc, namespace, name, target.snapshot);
    if (dryRun) return { apiVersion: SANDBOX_API_VERSION, kind: 'Sandbox', metadata: { name: target.name, namespace }, status: { nodeName: loc.node } };
    const ctx = { verb: 'claim snapshot', node: loc.node, id: cp.id };
    const client = this.#client(loc, ctx);
    const release = this.storage.names.hold(namespace, target.name);
    try {
      // no_redirect: we checked this node holds the record, and a redirect would land the
      // sandbox on a node the caller never chose
      const lease = this.storage.leases.forRequested(target.ttlSeconds);
      const claimRef = formatOwnerRef({ kind: OWNER_KINDS.snapshot, uid: randomUUID(), namespace, name: target.name, ...(lease.renewed ? { renewed: true } : {}) });
      const res = await this.#call(ctx, () => client.claimCheckpoint(cp.id, { claimRef, noRedirect: true, ...(lease.ttlSeconds ? { ttlSeconds: lease.ttlSeconds } : {}) }, { signal: AbortSignal.timeout(30_000) }));
      const listed = listClaimed(this.storage, { node: loc.node, namespace, name: target.name, id: res.id, addr: res.ownerAddr, deadline: res.deadline, claimRef });
      const annotations: Record<string, string> = { ...(listed.metadata.annotations ?? {}), [ANNOTATIONS.claimId]: res.id };
      if (res.token) annotations[ANNOTATIONS.token] = res.token;
      return { ...listed, metadata: { ...listed.metadata, annotations } };
    } finally {
      release();
    }
  }

  async #locate(namespace: string, name: string): Promise<SandboxLocation> {
    const loc = await this.storage.locate(namespace, name);
    if (loc.claimId === '') throw new StatusError('InternalError', `sandbox ${namespace}/${name} carries no claim id; refusing to act by name`);
    return loc;
  }

  #client(loc: SandboxLocation, ctx: SnapshotCallContext): SandboxdClient {
    return this.storage.router.clientFor(loc.node, ctx.verb, ctx.id);
  }

  async #call<T>(ctx: SnapshotCallContext, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw snapshotStatusError(err, ctx);
    }
  }

  async #checkpointsOf(loc: SandboxLocation): Promise<Checkpoint[]> {
    const ctx = { verb: 'list snapshots', node: loc.node, id: loc.claimId };
    const client = this.#client(loc, ctx);
    const all = await this.#call(ctx, () => client.checkpoints({ signal: AbortSignal.timeout(30_000) }));
    return all.filter((cp) => cp.sandboxId === loc.claimId);
  }

  async #find(loc: SandboxLocation, namespace: string, name: string, snapshot: string): Promise<Checkpoint> {
    const cp = (await this.#checkpointsOf(loc)).find((c) => c.id === snapshot);
    if (cp === undefined) throw snapshotNotFound(snapshot, namespace, name);
    return cp;
  }
}
