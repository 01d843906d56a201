import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/**
 * Get-or-create metrics on a registry that is passed in (never the global one): several
 * controllers or informers in one process share a metric and differ only by label.
 */
function existing<M>(registry: Registry, name: string, ctor: abstract new (...args: never[]) => M): M | undefined {
  const m = registry.getSingleMetric(name);
  return m instanceof ctor ? m : undefined;
}

export function counter<L extends string>(registry: Registry, name: string, help: string, labelNames: readonly L[]): Counter<L> {
  return existing<Counter<L>>(registry, name, Counter) ?? new Counter<L>({ name, help, labelNames, registers: [registry] });
}

export function gauge<L extends string>(registry: Registry, name: string, help: string, labelNames: readonly L[]): Gauge<L> {
  return existing<Gauge<L>>(registry, name, Gauge) ?? new Gauge<L>({ name, help, labelNames, registers: [registry] });
}

export function histogram<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly L[],
  buckets: number[],
): Histogram<L> {
  return existing<Histogram<L>>(registry, name, Histogram) ?? new Histogram<L>({ name, help, labelNames, buckets, registers: [registry] });
}
