import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RbacAuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { kubeconfigForServiceAccount, kubeconfigText, kubectl } from '@sandbox-scale/e2e';
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

export async function createClaim(kc: KubeConfig, ns: string, name: string, pool: string, opts: { lifecycle?: Record<string, unknown>; labels?: Record<string, string> } = {}): Promise<void> {
  const { lifecycle, labels } = opts;
  await new ResourceClient(kc, SandboxClaimResource).create(ns, {
    apiVersion: EXTENSIONS_API_VERSION,
    kind: 'SandboxClaim',
    metadata: { name, ...(labels ? { labels } : {}) },
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

/**
 * A kubeconfig file for a service account that can do everything the controller does except
 * write claim status: its deliveries happen, their Bound records cannot land — the window a
 * crash leaves open. It may hold the leader Lease, so it can run as one of two replicas.
 */
export async function kubeconfigWithoutStatusWrites(kc: KubeConfig, ns: string, rbacName: string): Promise<{ file: string; remove(): Promise<void> }> {
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createClusterRole({
    body: {
      metadata: { name: rbacName },
      rules: [
        { apiGroups: ['extensions.agents.x-k8s.io'], resources: ['sandboxclaims', 'sandboxwarmpools', 'sandboxtemplates', 'nodeinventories'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: ['extensions.agents.x-k8s.io'], resources: ['sandboxclaims'], verbs: ['patch', 'update'] },
        { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'create', 'patch'] },
        { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
      ],
    },
  });
  await rbac.createClusterRoleBinding({
    body: { metadata: { name: rbacName }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: rbacName }, subjects: [{ kind: 'ServiceAccount', name: 'limited', namespace: ns }] },
  });
  const sa = await kubeconfigForServiceAccount(kc, ns, 'limited');
  const file = join(mkdtempSync(join(tmpdir(), 'cc-limited-')), 'kubeconfig');
  writeFileSync(file, kubeconfigText(sa));
  return {
    file,
    remove: async () => {
      await rbac.deleteClusterRoleBinding({ name: rbacName }).catch(() => undefined);
      await rbac.deleteClusterRole({ name: rbacName }).catch(() => undefined);
    },
  };
}

/** Requests the simulated nodes served so far on each of `routes`. */
export function nodeRequests(sim: Sim, routes: readonly string[]): Record<string, number> {
  const out: Record<string, number> = Object.fromEntries(routes.map((r) => [r, 0]));
  for (const n of sim.nodes) for (const r of routes) out[r] = (out[r] ?? 0) + (sim.node(n.name).state.metrics.requests.get(r) ?? 0);
  return out;
}

/**
 * claim-controller as its own process (main.ts) with the fleet token in a file, no listeners and
 * `args` appended; `exited` settles when it ends. CC_DEBUG=1 shows its log.
 */
export function spawnClaimController(kubeconfig: string, args: readonly string[], token = ROOT_TOKEN): { child: ChildProcess; exited: Promise<void> } {
  const tokenFile = join(mkdtempSync(join(tmpdir(), 'cc-token-')), 'token');
  writeFileSync(tokenFile, `${token}\n`);
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'apps/claim-controller/src/main.ts', '--kubeconfig', kubeconfig, '--fleet-token-file', tokenFile, '--metrics-bind-address', '0', '--health-probe-bind-address', '0', '--fast-path-bind-address', '0', ...args],
    { cwd: process.cwd(), stdio: ['ignore', process.env.CC_DEBUG ? 'inherit' : 'ignore', 'inherit'], env: { ...process.env, LOG_LEVEL: process.env.CC_DEBUG ? 'info' : 'error' } },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { child, exited };
}
