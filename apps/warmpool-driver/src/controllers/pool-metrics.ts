import type { Informer } from '@sandbox-scale/kube-runtime';
import { CONDITION_STATUS, CONDITION_TYPES, type SandboxWarmPool } from '@sandbox-scale/scale-core';
import { Gauge, type Registry } from 'prom-client';

type PoolLabels = 'namespace' | 'pool';

export interface PoolMetricsSource {
  pools: Pick<Informer<SandboxWarmPool>, 'list'>;
  /** Warm VMs per pool id (namespace/name) counted by this process's last sync; empty on a replica that is not leading. */
  warmByPool: ReadonlyMap<string, number>;
}

/**
 * Per-pool gauges, read at scrape time from the pool cache, so a deleted pool drops out and a
 * standby replica reports the recorded status only. Labels are the pool's namespace and name.
 */
export function poolMetrics(registry: Registry, src: PoolMetricsSource): void {
  const perPool = (name: string, help: string, value: (p: SandboxWarmPool, id: string) => number | undefined): void => {
    new Gauge<PoolLabels>({
      name,
      help,
      labelNames: ['namespace', 'pool'],
      registers: [registry],
      collect() {
        this.reset();
        for (const p of src.pools.list()) {
          const namespace = p.metadata.namespace ?? '';
          const pool = p.metadata.name ?? '';
          const v = value(p, `${namespace}/${pool}`);
          if (v !== undefined) this.set({ namespace, pool }, v);
        }
      },
    });
  };
  perPool(
    'sandbox_scale_warmpool_driver_pool_target_replicas',
    'spec.replicas of each SandboxWarmPool: the warm VMs wanted.',
    (p) => p.spec.replicas,
  );
  perPool(
    'sandbox_scale_warmpool_driver_pool_warm_replicas',
    'Warm VMs of each pool key on routable nodes, counted by the leading driver at its last sync.',
    (_p, id) => src.warmByPool.get(id),
  );
  perPool(
    'sandbox_scale_warmpool_driver_pool_ready_replicas',
    'status.readyReplicas of each SandboxWarmPool, as last written.',
    (p) => p.status?.readyReplicas ?? 0,
  );
  perPool(
    'sandbox_scale_warmpool_driver_pool_degraded',
    '1 while a SandboxWarmPool says Degraded=True (some targets could not be driven).',
    (p) => (p.status?.conditions?.some((c) => c.type === CONDITION_TYPES.degraded && c.status === CONDITION_STATUS.true) ? 1 : 0),
  );
}
