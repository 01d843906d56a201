import type { NodeInventory } from '@sandbox-scale/scale-core';
import { Registry } from 'prom-client';
import { inventoryMetrics } from './metrics';

function inventory(node: string, conditions: { type: string; status: string }[], entries = 0): NodeInventory {
  return {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'NodeInventory',
    metadata: { name: node },
    node,
    entries: Array.from({ length: entries }, (_, i) => ({ name: `ns/s${i}`, phase: 'Running' })),
    conditions: conditions.map((c) => ({ ...c, reason: 'R', message: 'm', lastTransitionTime: '2026-01-01T00:00:00Z' })),
  } as NodeInventory;
}

async function byNode(registry: Registry, name: string): Promise<Record<string, number>> {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
  return Object.fromEntries((m?.values ?? []).map((v) => [String(v.labels['node']), v.value]));
}

describe('inventoryMetrics', () => {
  it('reports stale, draining and entries per node from the cache at scrape time', async () => {
    const registry = new Registry();
    let invs = [
      inventory('n-1', [{ type: 'Stale', status: 'True' }], 2),
      inventory('n-2', [
        { type: 'Stale', status: 'False' },
        { type: 'Draining', status: 'True' },
      ]),
    ];
    inventoryMetrics(registry, () => invs);
    expect(await byNode(registry, 'sandbox_scale_apiserver_inventory_stale')).toEqual({ 'n-1': 1, 'n-2': 0 });
    expect(await byNode(registry, 'sandbox_scale_apiserver_inventory_draining')).toEqual({ 'n-1': 0, 'n-2': 1 });
    expect(await byNode(registry, 'sandbox_scale_apiserver_inventory_entries')).toEqual({ 'n-1': 2, 'n-2': 0 });
    // a node whose inventory is gone drops out
    invs = [invs[1] as NodeInventory];
    expect(await byNode(registry, 'sandbox_scale_apiserver_inventory_stale')).toEqual({ 'n-2': 0 });
  });
});
