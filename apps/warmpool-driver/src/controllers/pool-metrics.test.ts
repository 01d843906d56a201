import type { SandboxWarmPool } from '@sandbox-scale/scale-core';
import { Registry } from 'prom-client';
import { poolMetrics } from './pool-metrics';

function pool(namespace: string, name: string, replicas: number, status?: SandboxWarmPool['status']): SandboxWarmPool {
  return {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxWarmPool',
    metadata: { namespace, name },
    spec: { replicas, sandboxTemplateRef: { name: 't' } },
    ...(status ? { status } : {}),
  } as SandboxWarmPool;
}

async function values(registry: Registry, name: string): Promise<Record<string, number>> {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
  return Object.fromEntries((m?.values ?? []).map((v) => [`${String(v.labels['namespace'])}/${String(v.labels['pool'])}`, v.value]));
}

describe('poolMetrics', () => {
  it('reports target, warm, ready and degraded per pool at scrape time, and drops a deleted pool', async () => {
    const registry = new Registry();
    const degraded = {
      type: 'Degraded',
      status: 'True' as const,
      reason: 'PushFailed',
      message: 'm',
      lastTransitionTime: '2026-01-01T00:00:00Z',
    };
    let pools = [pool('a', 'p', 5, { readyReplicas: 3, conditions: [degraded] }), pool('b', 'q', 2)];
    const warmByPool = new Map([['a/p', 4]]);
    poolMetrics(registry, { pools: { list: () => pools }, warmByPool });
    expect(await values(registry, 'sandbox_scale_warmpool_driver_pool_target_replicas')).toEqual({ 'a/p': 5, 'b/q': 2 });
    // a pool this process has not synced (a standby replica) has no warm count
    expect(await values(registry, 'sandbox_scale_warmpool_driver_pool_warm_replicas')).toEqual({ 'a/p': 4 });
    expect(await values(registry, 'sandbox_scale_warmpool_driver_pool_ready_replicas')).toEqual({ 'a/p': 3, 'b/q': 0 });
    expect(await values(registry, 'sandbox_scale_warmpool_driver_pool_degraded')).toEqual({ 'a/p': 1, 'b/q': 0 });
    pools = [pools[1] as SandboxWarmPool];
    expect(await values(registry, 'sandbox_scale_warmpool_driver_pool_target_replicas')).toEqual({ 'b/q': 2 });
  });
});
