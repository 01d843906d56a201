import type { KubeConfig } from '@kubernetes/client-node';
import { createInformer, type Informer, type KubeResource, type Logger } from '@sandbox-scale/kube-runtime';
import { NodeInventorySchema, parseObject, RESOURCES, type NodeInventory } from '@sandbox-scale/scale-core';
import type { Registry } from 'prom-client';
import type { SandboxCache } from './sandbox-cache';

export const NODE_INVENTORY_RESOURCE: KubeResource = RESOURCES.nodeInventory;

/**
 * The only thing read from etcd: NodeInventory objects, through one informer (list at
 * resourceVersion 0, then watch). A malformed inventory keeps its last good copy; a deleted
 * one is kept for the cache's grace period.
 */
export function startInventoryInformer(
  kc: KubeConfig,
  cache: SandboxCache,
  log: Logger,
  registry?: Registry,
  labelSelector?: string,
): Informer<NodeInventory> {
  const informer = createInformer<NodeInventory>(kc, {
    resource: NODE_INVENTORY_RESOURCE,
    ...(labelSelector ? { labelSelector } : {}),
    parse: (obj) => parseObject(NodeInventorySchema, obj),
    log,
    ...(registry ? { registry } : {}),
  });
  informer.on({
    add: (inv) => cache.upsertInventory(inv),
    update: (inv) => cache.upsertInventory(inv),
    delete: (inv) => cache.removeInventory(inv.metadata.name ?? inv.node),
  });
  informer.start();
  return informer;
}
