import type { Registry } from 'prom-client';
import { gauge } from './metric-factory';

/** `sandbox_scale_leader{lease}`: 1 on the replica holding the Lease, 0 on its standbys. */
export function leaderGauge(registry: Registry, lease: string): { set(leading: boolean): void } {
  const g = gauge(registry, 'sandbox_scale_leader', 'Whether this replica holds its component Lease (1) or stands by (0).', ['lease']);
  return { set: (leading) => g.set({ lease }, leading ? 1 : 0) };
}
