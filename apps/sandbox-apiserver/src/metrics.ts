import type { IncomingMessage } from 'node:http';
import { requestUrl } from '@sandbox-scale/kube-runtime';
import { CONDITION_STATUS, CONDITION_TYPES, type NodeInventory } from '@sandbox-scale/scale-core';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { ACTIONS } from './discovery';
import { isDataPlaneSubresource } from './data-plane/subresources';
import { requestInfoOf, type RequestInfo } from './http/request-info';

const KNOWN_VERBS = new Set(['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection']);

/** The labels of a request; one that cannot be parsed (bad target or encoding) counts as `invalid`. */
function labelsOf(req: IncomingMessage): { verb: string; resource: string } {
  const url = requestUrl(req.url, 'https://localhost');
  let info: RequestInfo;
  try {
    if (url === undefined) return { verb: 'invalid', resource: 'invalid' };
    info = requestInfoOf(req.method ?? 'GET', url);
  } catch {
    return { verb: 'invalid', resource: 'invalid' };
  }
  if (!info.isResource) return { verb: 'get', resource: 'nonresource' };
  const sub = ACTIONS.some((a) => a.name === info.subresource) || isDataPlaneSubresource(info.subresource) ? `/${info.subresource}` : '';
  // a verb from an unknown method would be an unbounded label value
  const verb = KNOWN_VERBS.has(info.verb) ? info.verb : 'other';
  return { verb, resource: info.resource === 'sandboxes' ? `sandboxes${sub}` : 'other' };
}

/** Request counts and latencies; labels are bounded (verb, resource, code — never a name). */
export function requestMetrics(registry: Registry): { start(req: IncomingMessage): (code: number) => void } {
  const total = new Counter({
    name: 'sandbox_scale_apiserver_requests_total',
    help: 'API requests by verb, resource and HTTP code',
    labelNames: ['verb', 'resource', 'code'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'sandbox_scale_apiserver_request_duration_seconds',
    help: 'API request latency (watches: until the stream ends)',
    labelNames: ['verb', 'resource'],
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
    registers: [registry],
  });
  return {
    start(req) {
      const began = process.hrtime.bigint();
      const { verb, resource } = labelsOf(req);
      return (code) => {
        total.inc({ verb, resource, code: String(code) });
        duration.observe({ verb, resource }, Number(process.hrtime.bigint() - began) / 1e9);
      };
    },
  };
}

const conditionTrue = (inv: NodeInventory, type: string): number =>
  inv.conditions?.some((c) => c.type === type && c.status === CONDITION_STATUS.true) ? 1 : 0;

/**
 * Per-node state of the NodeInventory cache, read at scrape time so a deleted node drops out.
 * The node label is bounded by the fleet size; one series per node and gauge.
 */
export function inventoryMetrics(registry: Registry, inventories: () => readonly NodeInventory[]): void {
  const set = (g: Gauge<'node'>, value: (inv: NodeInventory) => number): void => {
    g.reset();
    for (const inv of inventories()) g.set({ node: inv.node }, value(inv));
  };
  new Gauge({
    name: 'sandbox_scale_apiserver_inventory_stale',
    help: "1 while a node's NodeInventory says Stale=True (its publisher cannot read sandboxd; the last state is served).",
    labelNames: ['node'],
    registers: [registry],
    collect() {
      set(this, (inv) => conditionTrue(inv, CONDITION_TYPES.stale));
    },
  });
  new Gauge({
    name: 'sandbox_scale_apiserver_inventory_draining',
    help: "1 while a node's NodeInventory says Draining=True.",
    labelNames: ['node'],
    registers: [registry],
    collect() {
      set(this, (inv) => conditionTrue(inv, CONDITION_TYPES.draining));
    },
  });
  new Gauge({
    name: 'sandbox_scale_apiserver_inventory_entries',
    help: "Live sandboxes in a node's NodeInventory.",
    labelNames: ['node'],
    registers: [registry],
    collect() {
      set(this, (inv) => inv.entries?.length ?? 0);
    },
  });
}

/**
 * Sandboxes found under a claim reference this control plane did not write (no MAC, or a wrong
 * one: a node's or a sandboxd tenant's) where the reference would have made it act, by what it
 * would have done; counted once per sandbox. They are served, never acted on.
 */
export function unprovenRefMetric(registry: Registry, action: 'renew' | 'shadow'): () => void {
  const total =
    (registry.getSingleMetric('sandbox_scale_apiserver_unproven_claim_refs_total') as Counter<'action'> | undefined) ??
    new Counter({
      name: 'sandbox_scale_apiserver_unproven_claim_refs_total',
      help: 'Sandboxes under a claim reference without a valid MAC, by the action refused (renew; shadow: taking a name a proven sandbox of another node holds); served, never acted on',
      labelNames: ['action'],
      registers: [registry],
    });
  return () => total.inc({ action });
}

/** Requests held open at once: watches, and streams (exec, file transfers, port-forwards), read at scrape time. */
export function inflightMetrics(registry: Registry, inflight: { readonly watches: number; readonly streams: number }): void {
  new Gauge({
    name: 'sandbox_scale_apiserver_long_running_in_flight',
    help: 'Requests held open at once: watches, and streams (exec, file transfers and port-forwards).',
    labelNames: ['kind'],
    registers: [registry],
    collect() {
      this.set({ kind: 'watch' }, inflight.watches);
      this.set({ kind: 'stream' }, inflight.streams);
    },
  });
}
