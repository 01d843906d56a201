import { randomUUID } from 'node:crypto';
import {
  AlreadyExistsError,
  ANNOTATIONS,
  BadRequestError,
  DNS1123_SUBDOMAIN,
  DNS1123_SUBDOMAIN_MAX_LENGTH,
  formatOwnerRef,
  formatRfc3339Seconds,
  InvalidError,
  inventoryName,
  NotFoundError,
  OWNER_KINDS,
  SANDBOX_API_VERSION,
  SANDBOX_GROUP,
  StatusError,
  statusErrorOf,
  type ServedSandbox,
} from '@sandbox-scale/scale-core';
import type { Checkpoint, SandboxdClient } from '@sandbox-scale/sandboxd-client';
import { z } from 'zod';
import { listClaimed } from './claimed-listing';
import { SANDBOX_RESOURCE, type SandboxLocation, type SandboxStorage } from './sandbox-storage';
import { snapshotNotFound, snapshotStatusError, type SnapshotCallContext } from './snapshot-errors';
import { checkpointName, MAX_SNAPSHOT_LABEL, ownerTag, parseCheckpointName, SNAPSHOT_LABEL } from './snapshot-owner';

/** Options bodies; `kind`, `apiVersion` and `metadata` are tolerated. */
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
    return {
      reason: missing ? 'FieldValueRequired' : 'FieldValueInvalid',
      field,
      message: missing ? `${field}: Required value` : `${field}: ${i.message}`,
    };
  });
  throw new StatusError('BadRequest', `the body is not a valid ${expected}: ${causes.map((c) => c.message).join(', ')}`, { causes });
}

/** A checkpoint and the node that holds it. */
interface Held {
  readonly cp: Checkpoint;
  readonly node: string;
}

/** The snapshots of one sandbox name over every node, and the nodes that could not be asked. */
interface Holdings {
  readonly items: Held[];
  readonly unreachable: string[];
  /** The sandbox itself, when it is still live. */
  readonly source: SandboxLocation | undefined;
}

/** What a list item says about one checkpoint; the id is the handle for delete and claim. */
function snapshotItem({ cp, node }: Held): Record<string, unknown> {
  const { label } = parseCheckpointName(cp.name);
  return {
    snapshotID: cp.id,
    ...(label ? { name: label } : {}),
    sandboxID: cp.sandboxId,
    nodeName: node,
    pool: { template: cp.key.template, net: cp.key.net, size: cp.key.size },
    creationTimestamp: cp.createdAt ? formatRfc3339Seconds(cp.createdAt) : null,
  };
}

const isNotFound = (err: unknown): boolean => statusErrorOf(err)?.code === 404;

/**
 * The sandbox's checkpoints as subresources (issue 7: "snapshot; snapshots list/delete/claim").
 *
 * Design: every route is a subresource under `sandboxes/{name}/…`, like pause/fork, rather than
 * a new `snapshots` resource: POST for the verbs that act, and the list also a GET (verb `get`,
 * which the view role grants; POST stays for older clients), because:
 * - RBAC stays per sandbox name: `create` on `sandboxes/claimsnapshot` in a namespace reaches
 *   only the checkpoints taken from that namespace's sandboxes, never another tenant's checkpoint
 *   on the same node, although sandboxd itself treats the id as a capability;
 * - custom subresources are reachable from kubectl as `get --raw` and `create --raw`, and from
 *   client-go/client-node as a GET or POST of a subresource;
 * - a real `snapshots` resource would need list/watch across nodes, which controllers would
 *   start consuming; checkpoints are per-node records that we only read on demand.
 *
 * A snapshot belongs to the sandbox name it was taken from, not to the VM: each checkpoint's
 * node-side name carries a digest of `namespace/name` (snapshot-owner.ts), so the snapshots of
 * a sandbox stay listable, claimable and deletable after it is deleted or its lease ran out,
 * through any replica, with no state of our own: each verb reads every node's checkpoint list
 * (O(nodes) calls, on demand only). A checkpoint without a digest (taken before they carried
 * one) is reached only through its live source sandbox, by the sandbox's claim id.
 */
export class SnapshotStorage {
  constructor(private readonly storage: SandboxStorage) {}

  async act(
    namespace: string,
    name: string,
    action: SnapshotAction,
    body: unknown,
    dryRun: boolean,
  ): Promise<Record<string, unknown> | ServedSandbox> {
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
        return this.claim(
          namespace,
          name,
          { snapshot: o.snapshot, name: o.name, ...(o.ttlSeconds ? { ttlSeconds: o.ttlSeconds } : {}) },
          dryRun,
        );
      }
    }
  }

  /** The `snapshot` action: checkpoint the sandbox in place (it keeps running). */
  async create(namespace: string, name: string, label: string | undefined, dryRun: boolean): Promise<Record<string, unknown>> {
    if (label && !SNAPSHOT_LABEL.test(label)) {
      throw new InvalidError({ group: SANDBOX_GROUP, kind: 'SandboxSnapshotOptions' }, name, [
        {
          reason: 'FieldValueInvalid',
          field: 'name',
          message: `Invalid value: "${label}": at most ${MAX_SNAPSHOT_LABEL} characters of letters, digits and '._:/-', starting with a letter or digit`,
        },
      ]);
    }
    const loc = await this.#locate(namespace, name);
    if (dryRun) return { apiVersion: SANDBOX_API_VERSION, kind: 'SandboxSnapshotResult' };
    const ctx = { verb: 'snapshot', node: loc.node, id: loc.claimId };
    const client = this.#client(loc.node, ctx);
    const cp = await this.#call(ctx, () =>
      client.checkpoint(loc.claimId, { name: checkpointName(ownerTag(namespace, name), label) }, { signal: AbortSignal.timeout(30_000) }),
    );
    const taken = parseCheckpointName(cp.name).label;
    return {
      apiVersion: SANDBOX_API_VERSION,
      kind: 'SandboxSnapshotResult',
      snapshotID: cp.id,
      ...(taken ? { name: taken } : {}),
      nodeName: loc.node,
      creationTimestamp: cp.createdAt ? formatRfc3339Seconds(cp.createdAt) : null,
    };
  }

  /**
   * The snapshots taken from this sandbox name, newest first, over every node. A node that
   * cannot be asked is named in `unreachableNodes` rather than failing the whole list; a name
   * that is neither a sandbox nor holds a snapshot is 404.
   */
  async list(namespace: string, name: string): Promise<Record<string, unknown>> {
    const h = await this.#holdings(namespace, name);
    if (h.items.length === 0 && h.source === undefined) {
      if (h.unreachable.length > 0) throw unreachableError(h.unreachable, `the snapshots of ${namespace}/${name}`);
      throw new NotFoundError(SANDBOX_RESOURCE, name);
    }
    return {
      apiVersion: SANDBOX_API_VERSION,
      kind: 'SandboxSnapshotList',
      metadata: {},
      items: h.items.map(snapshotItem),
      ...(h.unreachable.length > 0 ? { unreachableNodes: h.unreachable } : {}),
    };
  }

  /** 404 when no snapshot of this name has that id (sandboxd itself treats a missing one as gone). */
  async remove(namespace: string, name: string, snapshot: string, dryRun: boolean): Promise<Record<string, unknown>> {
    const { node } = await this.#find(namespace, name, snapshot);
    if (!dryRun) {
      const ctx = { verb: 'delete snapshot', node, id: snapshot };
      const client = this.#client(node, ctx);
      await this.#call(ctx, () => client.deleteCheckpoint(snapshot, { signal: AbortSignal.timeout(30_000) }));
    }
    return { apiVersion: SANDBOX_API_VERSION, kind: 'SandboxDeleteSnapshotResult', snapshotID: snapshot, nodeName: node };
  }

  /**
   * A new sandbox `target.name` in the same namespace, branched from the checkpoint on the node
   * that holds it; listed at once like fork children. The token is in this response only.
   * Across replicas this runs on the owner of `target.name` (peers/owner-routing.ts), so the
   * name check here is the one every create of that name meets.
   */
  async claim(
    namespace: string,
    name: string,
    target: { snapshot: string; name: string; ttlSeconds?: number },
    dryRun: boolean,
  ): Promise<ServedSandbox | Record<string, unknown>> {
    if (this.storage.names.isTaken(namespace, target.name)) {
      throw new AlreadyExistsError(SANDBOX_RESOURCE, target.name);
    }
    const { cp, node } = await this.#find(namespace, name, target.snapshot);
    if (dryRun)
      return { apiVersion: SANDBOX_API_VERSION, kind: 'Sandbox', metadata: { name: target.name, namespace }, status: { nodeName: node } };
    const ctx = { verb: 'claim snapshot', node, id: cp.id };
    const client = this.#client(node, ctx);
    const release = this.storage.names.hold(namespace, target.name);
    try {
      // no_redirect: we checked this node holds the record, and a redirect would land the
      // sandbox on a node the caller never chose
      const lease = this.storage.leases.forRequested(target.ttlSeconds);
      const claimRef = formatOwnerRef(
        {
          kind: OWNER_KINDS.snapshot,
          uid: randomUUID(),
          namespace,
          name: target.name,
          ...(lease.renewed ? { renewed: true } : {}),
        },
        this.storage.refKey,
      );
      const res = await this.#call(ctx, () =>
        client.claimCheckpoint(
          cp.id,
          { claimRef, noRedirect: true, ...(lease.ttlSeconds ? { ttlSeconds: lease.ttlSeconds } : {}) },
          { signal: AbortSignal.timeout(30_000) },
        ),
      );
      const listed = listClaimed(this.storage, {
        node,
        namespace,
        name: target.name,
        id: res.id,
        addr: res.ownerAddr,
        deadline: res.deadline,
        claimRef,
      });
      const annotations: Record<string, string> = { ...(listed.metadata.annotations ?? {}), [ANNOTATIONS.claimId]: res.id };
      if (res.token) annotations[ANNOTATIONS.token] = res.token;
      return { ...listed, metadata: { ...listed.metadata, annotations } };
    } finally {
      release();
    }
  }

  async #locate(namespace: string, name: string): Promise<SandboxLocation> {
    const loc = await this.storage.locate(namespace, name);
    if (loc.claimId === '')
      throw new StatusError('InternalError', `sandbox ${namespace}/${name} carries no claim id; refusing to act by name`);
    return loc;
  }

  /** The live sandbox of this name, or undefined when there is none (its snapshots outlive it). */
  async #source(namespace: string, name: string): Promise<SandboxLocation | undefined> {
    try {
      const loc = await this.storage.locate(namespace, name);
      return loc.claimId === '' ? undefined : loc;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  #client(node: string, ctx: SnapshotCallContext): SandboxdClient {
    return this.storage.router.clientFor(node, ctx.verb, ctx.id);
  }

  async #call<T>(ctx: SnapshotCallContext, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw snapshotStatusError(err, ctx);
    }
  }

  /**
   * Every node's checkpoints, keeping those taken from `namespace/name`: the ones whose name
   * carries its digest (and no node tenant: ours are taken with the fleet token), and, from
   * before checkpoints carried one, those of the live sandbox by its claim id on its node.
   */
  async #holdings(namespace: string, name: string): Promise<Holdings> {
    this.storage.router.assertConfigured();
    return this.storage.fanOut.run(namespace, () => this.#askNodes(namespace, name));
  }

  async #askNodes(namespace: string, name: string): Promise<Holdings> {
    const source = await this.#source(namespace, name);
    const tag = ownerTag(namespace, name);
    const nodes = this.storage.cache.inventories().filter((inv) => inv.address);
    const unreachable: string[] = [];
    const lists = await Promise.all(
      nodes.map(async (inv): Promise<Held[]> => {
        const node = inventoryName(inv);
        try {
          const all = await this.storage.router.clientAt(inv.address ?? '').checkpoints({ signal: AbortSignal.timeout(10_000) });
          return all.filter((cp) => belongsTo(cp, node, tag, source)).map((cp) => ({ cp, node }));
        } catch {
          unreachable.push(node);
          return [];
        }
      }),
    );
    const items = lists
      .flat()
      .sort((a, b) => (b.cp.createdAt?.getTime() ?? 0) - (a.cp.createdAt?.getTime() ?? 0) || (a.cp.id < b.cp.id ? 1 : -1));
    return { items, unreachable: unreachable.sort(), source };
  }

  async #find(namespace: string, name: string, snapshot: string): Promise<Held> {
    const h = await this.#holdings(namespace, name);
    const held = h.items.find((i) => i.cp.id === snapshot);
    if (held !== undefined) return held;
    // the node that holds it may be the one we could not ask: not a 404
    if (h.unreachable.length > 0) throw unreachableError(h.unreachable, `snapshot "${snapshot}" of ${namespace}/${name}`);
    throw snapshotNotFound(snapshot, namespace, name);
  }
}

function belongsTo(cp: Checkpoint, node: string, tag: string, source: SandboxLocation | undefined): boolean {
  const parsed = parseCheckpointName(cp.name);
  if (parsed.tag !== undefined) return parsed.tag === tag && cp.tenant === undefined;
  return source !== undefined && source.node === node && cp.sandboxId === source.claimId;
}

function unreachableError(nodes: readonly string[], what: string): StatusError {
  return new StatusError(
    'ServiceUnavailable',
    `could not read ${what}: node${nodes.length > 1 ? 's' : ''} ${nodes.map((n) => `"${n}"`).join(', ')} did not answer; retry`,
    { retryAfterSeconds: 1 },
  );
}
