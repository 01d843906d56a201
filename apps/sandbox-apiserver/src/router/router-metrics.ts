import { Counter, Gauge, type Registry } from 'prom-client';

export interface RouterMetrics {
  /** Counts one answered request by its HTTP code (a cut stream counts as the code it had started with). */
  answered(code: number): void;
  relayStarted(): void;
  relayEnded(): void;
}

/** Router counters; labels are bounded (the code only — never a sandbox, a namespace or a user). */
export function routerMetrics(registry: Registry): RouterMetrics {
  const total = new Counter({
    name: 'sandbox_scale_apiserver_router_requests_total',
    help: 'Requests of the sandbox router by HTTP code (upgrades count their 101)',
    labelNames: ['code'],
    registers: [registry],
  });
  const inFlight = new Gauge({
    name: 'sandbox_scale_apiserver_router_relays_in_flight',
    help: 'Requests the sandbox router is relaying to guest ports now (open upgrades included)',
    registers: [registry],
  });
  return {
    answered: (code) => total.inc({ code: String(code) }),
    relayStarted: () => inFlight.inc(),
    relayEnded: () => inFlight.dec(),
  };
}
