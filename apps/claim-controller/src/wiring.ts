import type { KubeConfig } from '@kubernetes/client-node';
import { createInformer, type Informer, type Logger, type ReconcileRequest, withoutManagedFields } from '@sandbox-scale/kube-runtime';
import {
  ANNOTATIONS,
  CONDITION_REASONS,
  CONDITION_TYPES,
  EXTENSIONS_GROUP,
  InvalidError,
  inventoryObjectName,
  poolKeyForTemplate,
  refusedTemplateFields,
  type NodeInventory,
  type PoolKey,
  type SandboxClaim,
  type SandboxTemplate,
  type SandboxWarmPool,
} from '@sandbox-scale/scale-core';
import type { Registry } from 'prom-client';
import type { BoundClaimsByNode } from './controllers/inventory-presence';
import { OrphanReconciler, type OrphanReconcilerOptions } from './controllers/orphan-reconciler';
import type { ClaimClient } from './record/claim-client';
import { recordsSandbox } from './record/claim-status';
import {
  NodeInventoryResource,
  parseClaim,
  parseInventory,
  parsePool,
  parseTemplate,
  SandboxClaimResource,
  SandboxTemplateResource,
  SandboxWarmPoolResource,
} from './resources';

export interface Caches {
  claims: Informer<SandboxClaim>;
  pools: Informer<SandboxWarmPool>;
  templates: Informer<SandboxTemplate>;
  inventories: Informer<NodeInventory>;
}

/**
 * `claimSelector` / `inventorySelector`: label selectors; only the claims and NodeInventories
 * they match are seen (several controllers sharing one cluster, each with its own nodes).
 */
export function createCaches(kc: KubeConfig, log: Logger, registry: Registry, claimSelector?: string, inventorySelector?: string): Caches {
  return {
    claims: createInformer(kc, {
      resource: SandboxClaimResource,
      // one object per claim, three watch events each: nothing here reads managedFields, and
      // without them a claim parses and freezes in half the time and is held in less memory
      parse: (o) => parseClaim(withoutManagedFields(o)),
      log,
      registry,
      ...(claimSelector ? { labelSelector: claimSelector } : {}),
    }),
    pools: createInformer(kc, { resource: SandboxWarmPoolResource, parse: parsePool, log, registry }),
    templates: createInformer(kc, { resource: SandboxTemplateResource, parse: parseTemplate, log, registry }),
    inventories: createInformer(kc, {
      resource: NodeInventoryResource,
      parse: parseInventory,
      log,
      registry,
      ...(inventorySelector ? { labelSelector: inventorySelector } : {}),
    }),
  };
}

function keyOf(c: SandboxClaim): ReconcileRequest {
  return { namespace: c.metadata.namespace ?? '', name: c.metadata.name ?? '' };
}

/** New capacity wakes the claims waiting for it (NoWarmCapacity), so they bind without waiting out their backoff. */
export function claimsWaitingForCapacity(claims: Informer<SandboxClaim>): () => ReconcileRequest[] {
  return () =>
    claims
      .list()
      .filter(
        (c) =>
          !recordsSandbox(c) &&
          c.status?.conditions?.some((k) => k.type === CONDITION_TYPES.bound && k.reason === CONDITION_REASONS.noWarmCapacity),
      )
      .map(keyOf);
}

/** A pool that appears or changes wakes the unbound claims that name it. */
export function claimsOfPool(claims: Informer<SandboxClaim>): (pool: SandboxWarmPool) => ReconcileRequest[] {
  return (pool) =>
    claims
      .list(pool.metadata.namespace)
      .filter((c) => !recordsSandbox(c) && c.spec.warmPoolRef.name === pool.metadata.name)
      .map(keyOf);
}

/** warmPool -> template -> pool key for the fast path; an unknown one is a 422 naming the field. */
export function poolResolver(c: Caches): (namespace: string, warmPool: string) => PoolKey {
  return (namespace, warmPool) => {
    const invalid = (message: string): InvalidError =>
      new InvalidError({ group: EXTENSIONS_GROUP, kind: 'SandboxClaim' }, '', [
        { reason: 'FieldValueNotFound', field: 'warmPool', message },
      ]);
    const pool = c.pools.get(namespace, warmPool);
    if (!pool) throw invalid(`SandboxWarmPool "${warmPool}" not found in namespace ${namespace}`);
    const template = c.templates.get(namespace, pool.spec.sandboxTemplateRef.name);
    if (!template) throw invalid(`SandboxTemplate "${pool.spec.sandboxTemplateRef.name}" of pool "${warmPool}" not found`);
    // refused as a SandboxClaim of the pool is, before any VM is claimed
    const [refused] = refusedTemplateFields(template.spec);
    if (refused)
      throw new InvalidError({ group: EXTENSIONS_GROUP, kind: 'SandboxClaim' }, '', [
        {
          reason: 'FieldValueForbidden',
          field: 'warmPool',
          message: `SandboxTemplate "${pool.spec.sandboxTemplateRef.name}" of pool "${warmPool}": ${refused.field}: ${refused.message}`,
        },
      ]);
    return poolKeyForTemplate(template);
  };
}

/** The pool of `namespace` whose template has `key`: the warmPoolRef of a fast-path claim the orphan pass writes. */
export function poolOfKey(c: Caches): (namespace: string, key: PoolKey) => string | undefined {
  return (namespace, key) =>
    c.pools.list(namespace).find((p) => {
      const t = c.templates.get(namespace, p.spec.sandboxTemplateRef.name);
      if (!t) return false;
      const k = poolKeyForTemplate(t);
      return k.template === key.template && k.net === key.net && k.size === key.size;
    })?.metadata.name;
}

/** Names of the live fast-path claims of `namespace` in the cache (the per-namespace cap counts them). */
export function fastPathClaimNames(claims: Informer<SandboxClaim>): (namespace: string) => string[] {
  return (namespace) =>
    claims
      .list(namespace)
      .filter((c) => !c.metadata.deletionTimestamp && c.metadata.annotations?.[ANNOTATIONS.deliveryUid] !== undefined)
      .map((c) => c.metadata.name ?? '');
}

/**
 * The orphan pass over the caches: a delivery's pool and claim are looked up there, and a claim
 * the cache has not seen yet is read live through `claims`.
 */
export function createOrphanPass(
  c: Caches,
  o: Omit<OrphanReconcilerOptions, 'poolFor' | 'cachedClaim' | 'getClaim'> & { readonly claims: ClaimClient },
): OrphanReconciler {
  const { claims, ...rest } = o;
  return new OrphanReconciler({
    ...rest,
    poolFor: poolOfKey(c),
    cachedClaim: (namespace, name) => c.claims.get(namespace, name),
    getClaim: (namespace, name, signal) => claims.get(namespace, name, signal),
  });
}

/**
 * A node's inventory changed: its Bound claims whose sandbox it no longer lists are reconciled
 * (each then asks its node once), so a VM gone from its node is seen within a publish, not at the
 * next lease renewal. Only that node's claims are compared, over every object of the node.
 */
export function claimsMissingFromInventory(
  inventories: Pick<Informer<NodeInventory>, 'get'>,
  bound: Pick<BoundClaimsByNode, 'missingFrom'>,
): (inv: NodeInventory) => ReconcileRequest[] {
  return (inv) => {
    const own = inventories.get('', inventoryObjectName(inv.node));
    if (own === undefined) return []; // the node is gone from the inventories: nothing to compare with
    const objects = [own];
    for (let part = 1; part < (own.parts ?? 1); part++) {
      const o = inventories.get('', inventoryObjectName(inv.node, part));
      if (o !== undefined) objects.push(o);
    }
    return bound.missingFrom(inv.node, objects);
  };
}
