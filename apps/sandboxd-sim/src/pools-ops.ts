import { PoolsBodySchema, type PoolSpecBody } from '@sandbox-scale/sandboxd-client';
import { ApiError, badBody, parseBodyJson } from './api-error';
import type { SimPool } from './config';
import { findDuplicateKey } from './json-dupes';
import type { NodeState } from './node-state';
import type { DesiredPool } from './pool-set';
import type { SimKey } from './wire-key';

/** Fields that belong to the node's config file and may not be set through the API. */
const CONFIG_OWNED = ['egress', 'warmup', 'capture_trim', 'storage', 'egress_upstream_env'];

/** Strict decoding of the PUT body: unknown, repeated or config-owned fields are 400. */
export function decodePoolsBody(text: string): PoolSpecBody[] {
  const raw = parseBodyJson(text);
  const dup = findDuplicateKey(text);
  if (dup !== undefined) throw badBody(`duplicate field ${JSON.stringify(dup)}`);
  const pools = typeof raw === 'object' && raw !== null && Object.hasOwn(raw, 'pools') ? (raw as { pools: unknown }).pools : undefined;
  for (const p of Array.isArray(pools) ? pools : []) {
    const owned = CONFIG_OWNED.find((f) => typeof p === 'object' && p !== null && Object.hasOwn(p, f));
    if (owned) throw badBody(`field ${JSON.stringify(owned)} is set in the node config`);
  }
  const parsed = PoolsBodySchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const detail = issue?.code === 'unrecognized_keys' ? `unknown field ${JSON.stringify(issue.keys[0])}` : (issue?.message ?? 'bad shape');
    throw badBody(detail);
  }
  return parsed.data.pools ?? [];
}

function checkPool(node: NodeState, key: SimKey, p: PoolSpecBody): DesiredPool {
  const warm = p.warm ?? 0;
  const warmMax = p.warm_max ?? 0;
  const idle = p.idle_hibernate_seconds ?? 0;
  const archiveAfter = p.archive_after_seconds ?? 0;
  const archiveDelete = p.archive_delete_after_seconds ?? 0;
  const where = `pool ${key.template}/${key.net}/${key.size}`;
  if (warm < 0 || idle < 0 || archiveAfter < 0 || archiveDelete < 0) throw new ApiError(400, `invalid ${where}: negative value`);
  if (warmMax !== 0 && warmMax < warm) throw new ApiError(400, `invalid ${where}: warm_max below warm`);
  if (idle > 0 && key.net === 'egress') throw new ApiError(400, `invalid ${where}: idle hibernate not allowed on egress pools`);
  if (archiveAfter > 0 && (idle === 0 || archiveAfter <= idle)) {
    throw new ApiError(400, `invalid ${where}: archive_after_seconds needs idle_hibernate_seconds and must exceed it`);
  }
  if (key.net === 'egress' && !node.config.egress) throw new ApiError(409, 'egress lane not available on this node');
  return { key, settings: { warm, warmMax, idleHibernateS: idle, archiveAfterS: archiveAfter, archiveDeleteAfterS: archiveDelete } };
}

/** Validates the whole set before touching anything, then replaces the node's pools with it. */
export function setPools(node: NodeState, pools: readonly PoolSpecBody[]): void {
  const seen = new Set<string>();
  const desired = pools.map((p) => {
    const key = node.keys.parse(p.template, p.net, p.size);
    if (seen.has(key.id)) throw new ApiError(400, `duplicate pool ${key.template}/${key.net}/${key.size}`);
    seen.add(key.id);
    return checkPool(node, key, p);
  });
  node.pools.apply(desired);
}

/** Config-file pools use the same rules (camelCase fields). */
export function configPools(pools: readonly SimPool[]): PoolSpecBody[] {
  return pools.map((p) => ({
    template: p.template,
    ...(p.net ? { net: p.net } : {}),
    ...(p.size ? { size: p.size } : {}),
    warm: p.warm,
    warm_max: p.warmMax,
    idle_hibernate_seconds: p.idleHibernateSeconds,
    archive_after_seconds: p.archiveAfterSeconds,
    archive_delete_after_seconds: p.archiveDeleteAfterSeconds,
  }));
}

export function drain(node: NodeState): void {
  node.draining = true;
  node.pools.dropWarm();
}

export function undrain(node: NodeState): void {
  node.draining = false;
  node.pools.refillAll();
}
