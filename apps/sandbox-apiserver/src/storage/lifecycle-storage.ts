import { BadRequestError, formatRfc3339Seconds, SANDBOX_API_VERSION, StatusError, synthesizeSandbox } from '@sandbox-scale/scale-core';
import { z } from 'zod';
import type { SandboxStorage } from './sandbox-storage';

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

export const LIFECYCLE_ACTIONS = Object.keys(OPTION_KINDS);

const result = (kind: string, fields: Record<string, unknown> = {}): Record<string, unknown> => ({ apiVersion: SANDBOX_API_VERSION, kind, ...fields });

function parseBody(action: string, body: unknown): Body {
  const b = BodySchema.safeParse(body ?? {});
  if (!b.success) throw new BadRequestError(`the body is not a ${OPTION_KINDS[action]}: ${b.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join(', ')}`);
  if (b.data.kind !== undefined && b.data.kind !== OPTION_KINDS[action]) throw new BadRequestError(`expected kind ${OPTION_KINDS[action]} for ${action}, got ${b.data.kind}`);
  return b.data;
}

/**
 * POST sandboxes/{name}/{action} (scale-contracts §9.6, §6.10): resolve the sandbox (the
 * claim-time index answers for one created moments ago), then call its node by claim id.
 */
export class LifecycleStorage {
  constructor(private readonly storage: SandboxStorage) {}

  /** Fork children are listed at once, under the name their claim_ref gives them on the node. */
  #listChild(node: string, namespace: string, name: string, id: string, addr: string): void {
    const now = formatRfc3339Seconds(new Date());
    const entry = { name: `${namespace}/${name}`, id, phase: 'Running', claimRef: `${namespace}/${name}`, ...(addr ? { addr } : {}), claimedAt: now };
    this.storage.index.put({ namespace, name, node, claimId: id });
    this.storage.view.addCreated(node, entry, synthesizeSandbox(node, entry, { resourceVersion: '0', fallbackCreationTimestamp: now }));
  }

  async act(namespace: string, name: string, action: string, rawBody: unknown, dryRun: boolean): Promise<Record<string, unknown>> {
    if (!(action in OPTION_KINDS)) throw new StatusError('NotFound', `the server could not find the requested resource (post sandboxes/${action})`);
    const body = parseBody(action, rawBody);
    if (action === 'fork' && body.count !== undefined && body.count < 0) throw new BadRequestError('fork count must not be negative');
    if (action === 'promote' && !body.template) throw new BadRequestError('promote requires a template name');
    const loc = await this.storage.locate(namespace, name);
    if (loc.claimId === '') throw new StatusError('InternalError', `sandbox ${namespace}/${name} carries no claim id; refusing to act by name`);
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
        const children = await client.fork(id, { count: body.count || 1, ...(body.ttlSeconds ? { ttlSeconds: body.ttlSeconds } : {}), claimRefPrefix: `${namespace}/${name}-` }, { signal });
        for (const c of children) this.#listChild(loc.node, namespace, `${name}-${c.id}`, c.id, c.ownerAddr);
        return result('SandboxForkResult', { children: children.map((c) => ({ sandboxID: c.id, nodeName: loc.node, ...(c.ownerAddr ? { address: c.ownerAddr } : {}) })) });
      }
      case 'snapshot': {
        const cp = await client.checkpoint(id, body.name ? { name: body.name } : {}, { signal });
        return result('SandboxSnapshotResult', { snapshotID: cp.id, ...(cp.name ? { name: cp.name } : {}), nodeName: loc.node, creationTimestamp: cp.createdAt ? formatRfc3339Seconds(cp.createdAt) : null });
      }
      case 'promote': {
        const r = await client.promote(id, { template: body.template ?? '' }, { signal });
        return result('SandboxPromoteResult', { template: r.key.template, net: r.key.net, size: r.key.size, nodeName: loc.node });
      }
      default: {
        const s = await client.stats(id, { signal });
        return result('SandboxStats', { cpuCount: s.cpuCount, memTotalBytes: s.memTotalBytes, memUsedBytes: s.memUsedBytes, memUsedMeasured: s.memUsedMeasured, paused: s.hibernated, measuredAt: s.measuredAt ? formatRfc3339Seconds(s.measuredAt) : null, nodeName: loc.node });
      }
    }
  }
}
