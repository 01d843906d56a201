import type { IncomingMessage } from 'node:http';
import { Counter, Histogram, type Registry } from 'prom-client';
import { ACTIONS } from './discovery';
import { requestInfoOf } from './http/request-info';

/** Request counts and latencies; labels are bounded (verb, resource, code — never a name). */
export function requestMetrics(registry: Registry): { start(req: IncomingMessage): (code: number) => void } {
  const total = new Counter({ name: 'sandbox_scale_apiserver_requests_total', help: 'API requests by verb, resource and HTTP code', labelNames: ['verb', 'resource', 'code'], registers: [registry] });
  const duration = new Histogram({ name: 'sandbox_scale_apiserver_request_duration_seconds', help: 'API request latency (watches: until the stream ends)', labelNames: ['verb', 'resource'], buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30], registers: [registry] });
  return {
    start(req) {
      const began = process.hrtime.bigint();
      const info = requestInfoOf(req.method ?? 'GET', new URL(req.url ?? '/', 'https://localhost'));
      const sub = info.isResource && ACTIONS.some((a) => a.name === info.subresource) ? `/${info.subresource}` : '';
      const resource = info.isResource ? (info.resource === 'sandboxes' ? `sandboxes${sub}` : 'other') : 'nonresource';
      const verb = info.isResource ? info.verb : 'get';
      return (code) => {
        total.inc({ verb, resource, code: String(code) });
        duration.observe({ verb, resource }, Number(process.hrtime.bigint() - began) / 1e9);
      };
    },
  };
}
