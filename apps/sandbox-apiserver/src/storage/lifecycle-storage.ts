import { randomUUID } from 'node:crypto';
import {
  BadRequestError,
  formatOwnerRefPrefix,
  formatRfc3339Seconds,
  InvalidError,
  invalidPromotedName,
  issuesText,
  OWNER_KINDS,
  promotedTemplateName,
  SANDBOX_API_VERSION,
  SANDBOX_GROUP,
  servedObjectName,
  StatusError,
  type ServedSandbox,
} from '@sandbox-scale/scale-core';
import { z } from 'zod';
import { listClaimed } from './claimed-listing';
import { actionable, type SandboxStorage } from './sandbox-storage';
import { snapshotStatusError } from './snapshot-errors';
import { isSnapshotAction, SNAPSHOT_ACTIONS, SnapshotStorage } from './snapshot-storage';

const BodySchema = z.looseObject({
  kind: z.string().optional(),
  apiVersion: z.string().optional(),
  count: z.number().int().optional(),
  ttlSeconds: z.number().int().min(0).optional(),
  name: z.string().optional(),
  template: z.string().optional(),
});
type Body = z.infer<typeof BodySchema>;

/** The options kind each action accepts (an empty body or `{}` is fine too). */
const OPTION_KINDS: Record<string, string> = {
  pause: 'SandboxPauseOptions',
  resume: 'SandboxResumeOptions',
  fork: 'SandboxForkOptions',
  snapshot: 'SandboxSnapshotOptions',
  promote: 'SandboxPromoteOptions',
  stats: 'SandboxStatsOptions',
};

/** sandboxd's default `max_fork_count` (sandboxd-api §fork): more children than this are refused before the node is asked. */
export const MAX_FORK_COUNT = 16;

/** What a fork child's name adds to its parent's: `-` and the node's id `sb_` + 16 hex, served as `sb-…`. */
const FORK_CHILD_SUFFIX = 20;

export const LIFECYCLE_ACTIONS = [...Object.keys(OPTION_KINDS), ...Object.keys(SNAPSHOT_ACTIONS)];

const result = (kind: string, fields: Record<string, unknown> = {}): Record<string, unknown> => ({
  apiVersion: SANDBOX_API_VERSION,
  kind,
  ...fields,
});

function parseBody(action: string, body: unknown): Body {
  const b = BodySchema.safeParse(body ?? {});
  if (!b.success) throw new BadRequestError(`the body is not a ${OPTION_KINDS[action]}: ${issuesText(b.error)}`);
  if (b.data.kind !== undefined && b.data.kind !== OPTION_KINDS[action])
    throw new BadRequestError(`expected kind ${OPTION_KINDS[action]} for ${action}, got ${b.data.kind}`);
  return b.data;
}

/**
 * POST sandboxes/{name}/{action}, and GET of the reads (stats, snapshots) with no body: resolve
 * the sandbox (the claim-time index answers for one created moments ago), then call its node by
 * claim id.
 */
export class LifecycleStorage {
  readonly snapshots: SnapshotStorage;

  constructor(private readonly storage: SandboxStorage) {
    this.snapshots = new SnapshotStorage(storage);
  }

  async act(
    namespace: string,
    name: string,
    action: string,
    rawBody: unknown,
    dryRun: boolean,
  ): Promise<Record<string, unknown> | ServedSandbox> {
    if (isSnapshotAction(action)) return this.snapshots.act(namespace, name, action, rawBody, dryRun);
    if (!Object.hasOwn(OPTION_KINDS, action))
      throw new StatusError('NotFound', `the server could not find the requested resource (post sandboxes/${action})`);
    const body = parseBody(action, rawBody);
    // sandboxd's snapshot errors (409 egress lane, 404 …) keep their meaning: see snapshot-errors.ts
    if (action === 'snapshot') return this.snapshots.create(namespace, name, body.name, dryRun);
    if (action === 'fork' && body.count !== undefined && body.count < 0) throw new BadRequestError('fork count must not be negative');
    if (action === 'fork' && body.count !== undefined && body.count > MAX_FORK_COUNT) {
      throw new InvalidError({ group: SANDBOX_GROUP, kind: OPTION_KINDS.fork ?? 'SandboxForkOptions' }, name, [
        { reason: 'FieldValueInvalid', field: 'count', message: `Invalid value: ${body.count}: must be at most ${MAX_FORK_COUNT}` },
      ]);
    }
    if (action === 'fork' && name.length + FORK_CHILD_SUFFIX > 253) {
      throw new InvalidError({ group: SANDBOX_GROUP, kind: OPTION_KINDS.fork ?? 'SandboxForkOptions' }, name, [
        {
          reason: 'FieldValueInvalid',
          field: 'metadata.name',
          message: `Invalid value: fork children are named <name>-sb-<16 hex>, at most 253 characters: a parent name of ${name.length} characters (over ${253 - FORK_CHILD_SUFFIX}) leaves them none`,
        },
      ]);
    }
    if (action === 'promote' && !body.template) throw new BadRequestError('promote requires a template name');
    const promoteProblem = action === 'promote' ? invalidPromotedName(body.template ?? '') : undefined;
    if (promoteProblem !== undefined)
      throw new InvalidError({ group: SANDBOX_GROUP, kind: OPTION_KINDS.promote ?? 'SandboxPromoteOptions' }, name, [
        { reason: 'FieldValueInvalid', field: 'template', message: `Invalid value: ${JSON.stringify(body.template)}: ${promoteProblem}` },
      ]);
    const loc = actionable(await this.storage.locate(namespace, name), namespace, name, action);
    if (loc.claimId === '')
      throw new StatusError('InternalError', `sandbox ${namespace}/${name} carries no claim id; refusing to act by name`);
    if (dryRun) return result(OPTION_KINDS[action] ?? '');
    const client = this.storage.router.clientFor(loc.node, action, loc.claimId);
    const signal = AbortSignal.timeout(30_000);
    const id = loc.claimId;
    switch (action) {
      case 'pause':
        await client.hibernate(id, { signal });
        return result('SandboxPauseOptions');
      case 'resume':
        await client.wake(id, { signal });
        return result('SandboxResumeOptions');
      case 'fork': {
        // every child is owned by this fork call (one uid), under `<parent>-<child id>`
        // children never inherit the parent's lease: their own ttlSeconds, else they live until deleted
        const lease = this.storage.leases.forRequested(body.ttlSeconds);
        const claimRefPrefix = formatOwnerRefPrefix(
          {
            kind: OWNER_KINDS.fork,
            uid: randomUUID(),
            namespace,
            name: `${name}-`,
            ...(lease.renewed ? { renewed: true } : {}),
          },
          this.storage.refKey,
        );
        const children = await client.fork(
          id,
          { count: body.count || 1, ...(lease.ttlSeconds ? { ttlSeconds: lease.ttlSeconds } : {}), claimRefPrefix },
          { signal },
        );
        // served as `<parent>-sb-<n>`: the node's id holds `_`, which no object name may
        const childName = (c: { id: string }): string => servedObjectName(`${name}-${c.id}`);
        for (const c of children)
          listClaimed(this.storage, {
            node: loc.node,
            namespace,
            name: childName(c),
            id: c.id,
            addr: c.ownerAddr,
            claimRef: claimRefPrefix + c.id,
          });
        return result('SandboxForkResult', {
          children: children.map((c) => ({
            name: childName(c),
            sandboxID: c.id,
            nodeName: loc.node,
            ...(c.ownerAddr ? { address: c.ownerAddr } : {}),
          })),
        });
      }
      case 'promote': {
        // node-wide on the node, so named within the namespace there: it never replaces another
        // namespace's template, nor a pool's image (promoted-template.ts)
        const template = promotedTemplateName(namespace, body.template ?? '');
        const r = await client.promote(id, { template }, { signal }).catch((err: unknown) => {
          // the node's 409 (a configured pool's template) and the rest keep their meaning
          throw snapshotStatusError(err, { verb: 'promote', node: loc.node, id, notFoundKind: 'sandboxes' });
        });
        return result('SandboxPromoteResult', { template: r.key.template, net: r.key.net, size: r.key.size, nodeName: loc.node });
      }
      default: {
        const s = await client.stats(id, { signal });
        return result('SandboxStats', {
          cpuCount: s.cpuCount,
          memTotalBytes: s.memTotalBytes,
          memUsedBytes: s.memUsedBytes,
          memUsedMeasured: s.memUsedMeasured,
          paused: s.hibernated,
          measuredAt: s.measuredAt ? formatRfc3339Seconds(s.measuredAt) : null,
          nodeName: loc.node,
        });
      }
    }
  }
}
