import type { Registry } from 'prom-client';
import { counter, gauge, histogram } from '../metrics/metric-factory';

export type ReconcileOutcome = 'success' | 'error' | 'requeue_after' | 'terminal_error';

export interface ControllerMetrics {
  reconciled(outcome: ReconcileOutcome, seconds: number): void;
  depth(n: number): void;
  active(delta: number): void;
}

const OUTCOMES: ReconcileOutcome[] = ['success', 'error', 'requeue_after', 'terminal_error'];

export function controllerMetrics(registry: Registry | undefined, controller: string): ControllerMetrics {
  if (!registry) return { reconciled: () => undefined, depth: () => undefined, active: () => undefined };
  const total = counter(registry, 'sandbox_scale_reconcile_total', 'Reconciles by controller and result.', ['controller', 'result']);
  const duration = histogram(
    registry,
    'sandbox_scale_reconcile_duration_seconds',
    'Time per reconcile.',
    ['controller'],
    [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  );
  const depth = gauge(registry, 'sandbox_scale_workqueue_depth', 'Keys waiting to be reconciled.', ['controller']);
  const active = gauge(registry, 'sandbox_scale_reconcile_active', 'Reconciles running now.', ['controller']);
  // Zero series up front, so a dashboard tells "no errors" from "no data".
  for (const result of OUTCOMES) total.inc({ controller, result }, 0);
  depth.set({ controller }, 0);
  active.set({ controller }, 0);
  return {
    reconciled: (result, seconds) => {
      total.inc({ controller, result });
      duration.observe({ controller }, seconds);
    },
    depth: (n) => depth.set({ controller }, n),
    active: (d) => active.inc({ controller }, d),
  };
}
