import type { Registry } from 'prom-client';
import { counter, gauge } from '../metrics/metric-factory';

export interface InformerMetrics {
  restart(reason: 'error' | 'gone'): void;
  malformed(): void;
  handlerError(): void;
  objects(n: number): void;
}

export function informerMetrics(registry: Registry | undefined, resource: string): InformerMetrics {
  if (!registry) return { restart: () => undefined, malformed: () => undefined, handlerError: () => undefined, objects: () => undefined };
  const restarts = counter(
    registry,
    'sandbox_scale_informer_watch_restarts_total',
    'Watches restarted, by reason (error: backoff; gone: relist).',
    ['resource', 'reason'],
  );
  const malformed = counter(registry, 'sandbox_scale_informer_malformed_objects_total', 'Objects skipped because they failed to parse.', [
    'resource',
  ]);
  const handlerErrors = counter(registry, 'sandbox_scale_informer_handler_errors_total', 'Event handlers that threw.', ['resource']);
  const objects = gauge(registry, 'sandbox_scale_informer_objects', 'Objects in the informer cache.', ['resource']);
  return {
    restart: (reason) => restarts.inc({ resource, reason }),
    malformed: () => malformed.inc({ resource }),
    handlerError: () => handlerErrors.inc({ resource }),
    objects: (n) => objects.set({ resource }, n),
  };
}
