import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoordinationV1Api, RbacAuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { eventually, kubeconfigForServiceAccount, kubeconfigText, kubectl } from '@sandbox-scale/e2e';
import { applyObject, ResourceClient } from '@sandbox-scale/kube-runtime';
import { leaderElectionArgs } from '@sandbox-scale/kube-runtime/testing';
import { SandboxdClient } from '@sandbox-scale/sandboxd-client';
import type { Sim } from '@sandbox-scale/sandboxd-sim';
import { EXTENSIONS_API_VERSION, LEASE_NAMES, parseOwnerRef, type SandboxClaim } from '@sandbox-scale/scale-core';
import {
  NodeInventoryResource,
  parseClaim,
  SandboxClaimResource,
  SandboxTemplateResource,
  SandboxWarmPoolResource,
} from '../src/resources';

export const ROOT_TOKEN = 'root-fleet-token';

/** A label selector matching exactly `labels`. */
export function selectorOf(labels: Record<string, string>): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

/**
 * Publishes one NodeInventory per simulated node from its own GET /v1/info (the publisher is
 * another app; tests build the same object). Names carry the run suffix.
 */
export async function publishInventories(
  kc: KubeConfig,
  sim: Sim,
  suffix: string,
  opts: {
    token?: string;
    addressOf?: (node: string) => string | undefined;
    labels?: Record<string, string>;
    /** Also publish the node's live sandboxes as entries (as the publisher does), leaving out these ids (a snapshot older than them). */
    entries?: { without?: readonly string[] };
  } = {},
): Promise<void> {
  const token = opts.token ?? ROOT_TOKEN;
  for (const n of sim.nodes) {
    const client = new SandboxdClient({ baseUrl: n.url, token });
    const info = await client.info();
    const name = `${n.name}-${suffix}`;
    const without = new Set(opts.entries?.without ?? []);
    const entries = opts.entries
      ? (await client.sandboxes()).filter((r) => !without.has(r.id)).map((r) => ({ name: `default/${r.id}`, id: r.id, phase: 'Running' }))
      : undefined;
    await applyObject(
      kc,
      {
        apiVersion: EXTENSIONS_API_VERSION,
        kind: 'NodeInventory',
        metadata: { name, ...(opts.labels ? { labels: opts.labels } : {}) },
        node: name,
        address: opts.addressOf?.(n.name) ?? n.addr,
        ...(entries && entries.length > 0 ? { entries } : {}),
        pools: info.pools.map((p) => ({
          template: p.key.template,
          net: p.key.net || 'none',
          size: p.key.size || 'small',
          warm: p.warm,
          target: p.target,
        })),
      },
      { fieldManager: 'sandbox-scale/test', force: true, resource: NodeInventoryResource },
    );
  }
}

export async function deleteInventories(kc: KubeConfig, sim: Sim, suffix: string): Promise<void> {
  const c = new ResourceClient(kc, NodeInventoryResource);
  for (const n of sim.nodes) await c.delete(undefined, `${n.name}-${suffix}`).catch(() => undefined);
}

export async function createPool(
  kc: KubeConfig,
  ns: string,
  name: string,
  image: string,
  spec: { replicas?: number; coldStart?: 'Never' | 'WhenNoWarmCapacity' } = {},
): Promise<void> {
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

export async function createClaim(
  kc: KubeConfig,
  ns: string,
  name: string,
  pool: string,
  opts: { lifecycle?: Record<string, unknown>; labels?: Record<string, string> } = {},
): Promise<void> {
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
    for (const r of rows)
      if (r.claimRef && parseOwnerRef(r.claimRef)?.namespace === ns) out.push({ node: n.name, id: r.id, claimRef: r.claimRef });
  }
  return out;
}

/** The delivery in `delivered` made for the SandboxClaim `name` with `uid`, if any. */
export function deliveryOf<D extends { claimRef: string }>(delivered: readonly D[], name: string, uid: string | undefined): D | undefined {
  return delivered.find((d) => {
    const o = parseOwnerRef(d.claimRef);
    return o?.kind === 'SandboxClaim' && o.name === name && o.uid === uid;
  });
}

/** Waits until the sim's nodes hold at least `count` live deliveries for claims of `ns`. */
export async function waitForDeliveries(sim: Sim, ns: string, token: string, count: number): Promise<void> {
  await eventually(
    async () => {
      const live = await liveDeliveries(sim, ns, token);
      if (live.length < count) throw new Error(`${live.length} deliveries so far`);
    },
    { timeoutMs: 90_000 },
  );
}

/** The claim once its Bound condition is True. */
export async function waitForBound(kc: KubeConfig, ns: string, name: string, timeoutMs: number): Promise<SandboxClaim> {
  return eventually(
    async () => {
      const claim = await getClaim(kc, ns, name);
      if (boundCondition(claim)?.status !== 'True') throw new Error(`${ns}/${name} not Bound: ${JSON.stringify(claim.status?.conditions)}`);
      return claim;
    },
    { timeoutMs },
  );
}

/** Waits until every node of the sim holds at least `warm` VMs of `template` (at speed > 0 the pools fill after their golden build). */
export async function waitForWarmPools(sim: Sim, token: string, template: string, warm: number): Promise<void> {
  await eventually(async () => {
    for (const n of sim.nodes) {
      const info = await new SandboxdClient({ baseUrl: n.url, token }).info();
      if (!info.pools.some((p) => p.key.template === template && p.warm >= warm)) throw new Error(`${n.name} not warm yet`);
    }
  });
}

/** Notes of the events recorded for one object, by reason. */
/** `kubeconfig`: the file of a suite's own control plane; default the run's shared one. */
export async function eventsOf(ns: string, name: string, kubeconfig?: string): Promise<{ reason: string; note: string }[]> {
  const r = await kubectl(
    ['get', 'events', '-n', ns, '--field-selector', `involvedObject.name=${name}`, '-o', 'json'],
    kubeconfig === undefined ? {} : { kubeconfig },
  );
  if (r.code !== 0) throw new Error(`kubectl get events: ${r.stderr}`);
  const list = JSON.parse(r.stdout) as { items: { reason?: string; note?: string; message?: string }[] };
  return list.items.map((e) => ({ reason: e.reason ?? '', note: e.note ?? e.message ?? '' }));
}

export function releases(sim: Sim): number {
  return sim.nodes.reduce((sum, n) => sum + sim.node(n.name).state.metrics.releases, 0);
}

/**
 * A kubeconfig file for a service account that can do everything the controller does in `ns`
 * except write claim status: its deliveries happen, their Bound records cannot land — the window
 * a crash leaves open. It may hold the leader Lease, so it can run as one of two replicas. It
 * reads cluster-wide (as the controller does) but writes only in `ns`, so while it runs it
 * touches no other suite's claims or Secrets on the shared control plane.
 */
export async function kubeconfigWithoutStatusWrites(
  kc: KubeConfig,
  ns: string,
  rbacName: string,
): Promise<{ file: string; remove(): Promise<void> }> {
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  const subjects = [{ kind: 'ServiceAccount', name: 'limited', namespace: ns }];
  await rbac.createClusterRole({
    body: {
      metadata: { name: rbacName },
      rules: [
        {
          apiGroups: ['extensions.agents.x-k8s.io'],
          resources: ['sandboxclaims', 'sandboxwarmpools', 'sandboxtemplates', 'nodeinventories'],
          verbs: ['get', 'list', 'watch'],
        },
      ],
    },
  });
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: rbacName },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: rbacName },
      subjects,
    },
  });
  await rbac.createNamespacedRole({
    namespace: ns,
    body: {
      metadata: { name: rbacName },
      rules: [
        { apiGroups: ['extensions.agents.x-k8s.io'], resources: ['sandboxclaims'], verbs: ['patch', 'update'] },
        { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'create', 'patch'] },
        { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
      ],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace: ns,
    body: { metadata: { name: rbacName }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: rbacName }, subjects },
  });
  const sa = await kubeconfigForServiceAccount(kc, ns, 'limited');
  const file = join(mkdtempSync(join(tmpdir(), 'cc-limited-')), 'kubeconfig');
  writeFileSync(file, kubeconfigText(sa));
  return {
    file,
    // the Role and its binding go with the namespace
    remove: async () => {
      await rbac.deleteClusterRoleBinding({ name: rbacName }).catch(() => undefined);
      await rbac.deleteClusterRole({ name: rbacName }).catch(() => undefined);
    },
  };
}

/**
 * claim-controller as its own process (main.ts) with the fleet token in a file, no listeners and
 * `args` appended; `exited` settles when it ends. CC_DEBUG=1 shows its log.
 */
export function spawnClaimController(
  kubeconfig: string,
  args: readonly string[],
  token = ROOT_TOKEN,
  /** The claim reference key, base64, as its Secret holds it: the one an in-process replica of the same test proves references with. */
  claimRefKey: string,
): { child: ChildProcess; exited: Promise<void> } {
  const tokenFile = join(mkdtempSync(join(tmpdir(), 'cc-token-')), 'token');
  writeFileSync(tokenFile, `${token}\n`);
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'apps/claim-controller/src/main.ts',
      '--kubeconfig',
      kubeconfig,
      '--fleet-token-file',
      tokenFile,
      '--metrics-bind-address',
      '0',
      '--health-probe-bind-address',
      '0',
      '--fast-path-bind-address',
      '0',
      ...args,
    ],
    {
      cwd: process.cwd(),
      stdio: ['ignore', process.env.CC_DEBUG ? 'inherit' : 'ignore', 'inherit'],
      env: { ...process.env, LOG_LEVEL: process.env.CC_DEBUG ? 'info' : 'error', SANDBOX_SCALE_CLAIM_REF_KEY: claimRefKey },
    },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { child, exited };
}

export interface CountingProxies {
  /** host:port of the proxy in front of each simulated node, by node name. */
  addressOf(node: string): string | undefined;
  /** Requests bearing the token counted so far on `route` (`METHOD /path`, ids as `:id`), over every node. */
  count(route: string): number;
  close(): Promise<void>;
}

/**
 * A transparent HTTP proxy in front of each simulated node that counts, by route, only the
 * requests bearing `token`. Other suites' controllers share the control plane, see every
 * NodeInventory and ask these nodes too (with their own token); the count is this suite's alone.
 */
export async function countingProxies(sim: Sim, token: string): Promise<CountingProxies> {
  const counts = new Map<string, number>();
  const servers = new Map<string, { server: Server; addr: string }>();
  for (const n of sim.nodes) {
    const target = new URL(n.url);
    const server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      if (req.headers.authorization === `Bearer ${token}`) {
        const route = `${req.method} ${path.replace(/^\/v1\/sandboxes\/[^/]+$/, '/v1/sandboxes/:id')}`;
        counts.set(route, (counts.get(route) ?? 0) + 1);
      }
      const upstream = request(
        { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
        (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        },
      );
      upstream.on('error', () => {
        if (!res.headersSent) res.writeHead(502);
        res.end();
      });
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    servers.set(n.name, { server, addr: `127.0.0.1:${(server.address() as AddressInfo).port}` });
  }
  return {
    addressOf: (node) => servers.get(node)?.addr,
    count: (route) => counts.get(route) ?? 0,
    close: async () => {
      for (const { server } of servers.values()) {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    },
  };
}

/** Flags of a claim-controller process that leads through the Lease in `ns` (short durations, so a takeover is quick). */
export function leaderArgs(ns: string): string[] {
  return leaderElectionArgs(ns);
}

/** The same, for an in-process controller. */
export const LEADER_FLAGS = {
  leaderElect: true,
  leaderElectLeaseDuration: 4000,
  leaderElectRenewDeadline: 3000,
  leaderElectRetryPeriod: 500,
};

/** The holder of claim-controller's Lease in `ns`, once there is one other than `not`. */
export async function leaseHolder(kc: KubeConfig, ns: string, not = ''): Promise<string> {
  return (await heldLease(kc, ns, not)).holder;
}

async function heldLease(kc: KubeConfig, ns: string, not = ''): Promise<{ holder: string; acquired: number }> {
  return eventually(
    async () => {
      const lease = await kc.makeApiClient(CoordinationV1Api).readNamespacedLease({ namespace: ns, name: LEASE_NAMES.claimController });
      const holder = lease.spec?.holderIdentity ?? '';
      if (holder === '' || holder === not) throw new Error(`Lease held by "${holder}"`);
      return { holder, acquired: new Date(lease.spec?.acquireTime ?? 0).getTime() };
    },
    { timeoutMs: 90_000 },
  );
}

/**
 * Once a claim created now is newer than the current leader's leadership: it holds the Lease and
 * the second it took it in has passed (creationTimestamp has second precision, and a claim of
 * the same second counts as older, whose earlier deliveries are looked for on every node).
 */
export async function newerThanLeadership(kc: KubeConfig, ns: string): Promise<string> {
  const { holder, acquired } = await heldLease(kc, ns);
  await eventually(async () => {
    if (Date.now() < Math.floor(acquired / 1000) * 1000 + 1000) throw new Error('still the second the Lease was taken in');
  });
  return holder;
}
