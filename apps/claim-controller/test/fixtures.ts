import type { KubeConfig } from '@kubernetes/client-node';
import { kubectl } from '@sandbox-scale/e2e';
import { applyObject, ResourceClient } from '@sandbox-scale/kube-runtime';
import { SandboxdClient } from '@sandbox-scale/sandboxd-client';
import type { Sim } from '@sandbox-scale/sandboxd-sim';
import { EXTENSIONS_API_VERSION, parseOwnerRef, type SandboxClaim } from '@sandbox-scale/scale-core';
import { NodeInventoryResource, parseClaim, SandboxClaimResource, SandboxTemplateResource, SandboxWarmPoolResource } from '../src/resources';

export const ROOT_TOKEN = 'root-fleet-token';

/**
 * Publishes one NodeInventory per simulated node from its own GET /v1/info (the publisher is
 * another app; tests build the same object). Names carry the run suffix.
 */
export async function publishInventories(kc: KubeConfig, sim: Sim, suffix: string, token = ROOT_TOKEN): Promise<void> {
  for (const n of sim.nodes) {
    const info = await new SandboxdClient({ baseUrl: n.url, token }).info();
    const name = `${n.name}-${suffix}`;
    await applyObject(
      kc,
      {
        apiVersion: EXTENSIONS_API_VERSION,
        kind: 'NodeInventory',
        metadata: { name },
        node: name,
        address: n.addr,
        pools: info.pools.map((p) => ({ template: p.key.template, net: p.key.net || 'none', size: p.key.size || 'small', warm: p.warm, target: p.target })),
      },
      { fieldManager: 'sandbox-scale/test', force: true, resource: NodeInventoryResource },
    );
  }
}

export async function deleteInventories(kc: KubeConfig, sim: Sim, suffix: string): Promise<void> {
  const c = new ResourceClient(kc, NodeInventoryResource);
  for (const n of sim.nodes) await c.delete(undefined, `${n.name}-${suffix}`).catch(() => undefined);
}

export async function createPool(kc: KubeConfig, ns: string, name: string, image: string, spec: { replicas?: number; coldStart?: 'Never' | 'WhenNoWarmCapacity' } = {}): Promise<void> {
  await new ResourceClient(kc, SandboxTemplateResource).create(ns, {
    apiVersion: EXTENSIONS_API_VERSION,
    kind: 'SandboxTemplate',
    metadata: { name },
    spec: { podTemplate: { spec: { containers: [{ name: 'main', image }] } } },
  });
  await new ResourceClient(kc, SandboxWarmPoolResource).create(ns, {
    apiVersion: EXTENSIONS_API_VERSION,
    kind: 'SandboxWarmPool',
    metadata: { name },
    spec: { replicas: 1, ...spec, sandboxTemplateRef: { name } },
  });
}

export async function createClaim(kc: KubeConfig, ns: string, name: string, pool: string, lifecycle?: Record<string, unknown>): Promise<void> {
  await new ResourceClient(kc, SandboxClaimResource).create(ns, {
    apiVersion: EXTENSIONS_API_VERSION,
    kind: 'SandboxClaim',
    metadata: { name },
    spec: { warmPoolRef: { name: pool }, ...(lifecycle ? { lifecycle } : {}) },
  });
}

export async function getClaim(kc: KubeConfig, ns: string, name: string): Promise<SandboxClaim> {
  return parseClaim(await new ResourceClient(kc, SandboxClaimResource).get(ns, name));
}

export function boundCondition(c: SandboxClaim) {
  return c.status?.conditions?.find((k) => k.type === 'Bound');
}

/** Every live delivery on the sim whose claim_ref is in namespace `ns`. */
export async function liveDeliveries(sim: Sim, ns: string, token = ROOT_TOKEN): Promise<{ node: string; id: string; claimRef: string }[]> {
  const out: { node: string; id: string; claimRef: string }[] = [];
  for (const n of sim.nodes) {
    const rows = await new SandboxdClient({ baseUrl: n.url, token }).sandboxes();
    for (const r of rows) if (r.claimRef && parseOwnerRef(r.claimRef)?.namespace === ns) out.push({ node: n.name, id: r.id, claimRef: r.claimRef });
  }
  return out;
}

/** Notes of the events recorded for one object, by reason. */
export async function eventsOf(ns: string, name: string): Promise<{ reason: string; note: string }[]> {
  const r = await kubectl(['get', 'events', '-n', ns, '--field-selector', `involvedObject.name=${name}`, '-o', 'json']);
  if (r.code !== 0) throw new Error(`kubectl get events: ${r.stderr}`);
  const list = JSON.parse(r.stdout) as { items: { reason?: string; note?: string; message?: string }[] };
  return list.items.map((e) => ({ reason: e.reason ?? '', note: e.note ?? e.message ?? '' }));
}

export function releases(sim: Sim): number {
  return sim.nodes.reduce((sum, n) => sum + sim.node(n.name).state.metrics.releases, 0);
}
