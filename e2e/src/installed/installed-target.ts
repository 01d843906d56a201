import { KubeConfig } from '@kubernetes/client-node';
import { LEASE_NAMES } from '@sandbox-scale/scale-core';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { toolPath } from '../control-plane/tools';
import { ensureNamespace, routerAnswering, tenantCredentials } from '../system/local-target';
import { runCommand } from '../system/run-command';
import { keyringKeys, type LeaderComponent, type SystemUnderTest } from '../system/system-under-test';
import { runSuffix } from '../testing/cluster';
import { eventually } from '../testing/eventually';
import { MetricsScraper, type MetricsEndpoint } from '../testing/metrics-scraper';
import { INSTALLED_NAMESPACE, INSTALLED_RELEASE, installedPods, waitInstalled } from './installed-system';
import { NODE_NAMESPACE, ROUTER_SERVICE_NAME } from './installed-values';
import { ReleaseSchema } from '../release/release';

/** Where the installed run's global setup says what it installed (a JSON file, InstalledState). */
export const INSTALLED_STATE_ENV = 'SANDBOX_SCALE_E2E_INSTALLED_STATE';

export const InstalledStateSchema = z.object({
  kubeconfigPath: z.string(),
  binDir: z.string(),
  fleetToken: z.string(),
  sandboxdUrl: z.string(),
  /** The node's own sandboxd root token (per-node tokens). */
  sandboxdToken: z.string(),
  clusterCa: z.object({ cert: z.string(), key: z.string() }),
  frontProxyClient: z.object({ cert: z.string(), key: z.string() }),
  auditLogPath: z.string().optional(),
  /** What the release the chart was installed from printed. */
  release: ReleaseSchema,
});
export type InstalledState = z.infer<typeof InstalledStateSchema>;

export class NotInstalledError extends Error {
  override readonly name = 'NotInstalledError';
}
export const isNotInstalledError = (e: unknown): e is NotInstalledError => e instanceof NotInstalledError;

export function readInstalledState(): InstalledState {
  const path = process.env[INSTALLED_STATE_ENV];
  if (!path)
    throw new NotInstalledError(
      `${INSTALLED_STATE_ENV} is not set: the installed target runs under jest -c jest.installed.config.cjs (npm run e2e:installed)`,
    );
  return InstalledStateSchema.parse(JSON.parse(readFileSync(path, 'utf8')));
}

const COMPONENT_LABEL = 'app.kubernetes.io/component';
const CLAIM_REF_KEY_SECRET = `${INSTALLED_RELEASE}-claim-ref-key`;
const E2B_SERVICE_NAME = `${INSTALLED_RELEASE}-e2b`;
const SERVICE_DNS = (app: string): string => `${INSTALLED_RELEASE}-${app}.${INSTALLED_NAMESPACE}.svc`;
/** The chart's ports (values.yaml `ports`, `sandboxApiserver.securePort`). */
const PORTS = { metrics: 8080, health: 8081, apiserver: 6443, fastPath: 9443 };
/** The name the router's certificate (sandbox-apiserver's) holds for the router Service. */
const ROUTER_DNS = `${ROUTER_SERVICE_NAME}.${INSTALLED_NAMESPACE}.svc`;

interface Pod {
  metadata: { name: string; namespace?: string; creationTimestamp?: string; deletionTimestamp?: string; labels?: Record<string, string> };
  spec?: { nodeName?: string };
  status?: {
    podIP?: string;
    conditions?: { type: string; status: string }[];
    containerStatuses?: { name: string; restartCount: number }[];
  };
}
const isReady = (p: Pod): boolean => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/**
 * The chart as installed by the run's global setup, seen through the suites' one interface:
 * leaders are pods found from their Lease, a restart deletes a pod, logs and restarts come from
 * the kubelet through kube-apiserver.
 */
export async function connectInstalled(): Promise<SystemUnderTest> {
  const state = readInstalledState();
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(state.kubeconfigPath);
  const dir = mkdtempSync(join(tmpdir(), 'sandbox-scale-installed-suite-'));
  const kubectl = (args: string[], input?: string): Promise<string> =>
    runCommand(toolPath(state.binDir, 'kubectl'), args, { KUBECONFIG: state.kubeconfigPath }, input);
  const podsIn = async (namespace: string, component?: string): Promise<Pod[]> =>
    (
      JSON.parse(
        await kubectl(['-n', namespace, 'get', 'pods', ...(component ? ['-l', `${COMPONENT_LABEL}=${component}`] : []), '-o', 'json']),
      ) as { items: Pod[] }
    ).items;
  /** A component's pods (the publisher's in the node namespace); without one, every pod of both namespaces. */
  const pods = async (component?: string): Promise<Pod[]> =>
    component === 'inventory-publisher'
      ? podsIn(NODE_NAMESPACE, component)
      : component !== undefined
        ? podsIn(INSTALLED_NAMESPACE, component)
        : installedPods<Pod>(kubectl);
  const apiserverUrls = async (): Promise<string[]> =>
    (await pods('sandbox-apiserver'))
      .filter((p) => isReady(p) && !p.metadata.deletionTimestamp && p.status?.podIP)
      .map((p) => `https://${p.status?.podIP}:${PORTS.apiserver}`)
      .sort();
  const inventories = (JSON.parse(await kubectl(['get', 'nodeinventories', '-o', 'json'])) as { items: { metadata: { name: string } }[] })
    .items;
  if (inventories.length !== 1)
    throw new NotInstalledError(`the installed node publishes ${inventories.length} NodeInventories, expected 1`);
  const nodes = [{ name: inventories[0]?.metadata.name as string, url: state.sandboxdUrl, token: state.sandboxdToken }];
  const fastPath = JSON.parse(
    await kubectl(['-n', INSTALLED_NAMESPACE, 'get', 'service', `${INSTALLED_RELEASE}-claim-controller`, '-o', 'json']),
  ) as { spec: { clusterIP: string; ports: { name?: string; port: number }[] } };
  const fastPathPort = fastPath.spec.ports.find((p) => p.name === 'https')?.port ?? fastPath.spec.ports[0]?.port;
  const fastPathUrl = `https://${fastPath.spec.clusterIP}:${fastPathPort}`;
  const ca = JSON.parse(await kubectl(['-n', INSTALLED_NAMESPACE, 'get', 'secret', `${INSTALLED_RELEASE}-ca`, '-o', 'json'])) as {
    data: Record<string, string>;
  };
  // restarts each pod had when the suite connected: what happened in earlier suites is theirs
  const baseline = new Map((await pods()).map((p) => [p.metadata.name, restartsOf(p)]));
  let urls = await apiserverUrls();
  if (urls.length === 0) throw new NotInstalledError('no sandbox-apiserver pod is Ready');

  /** Controllers' and publishers' pods, keyed as the local system names its apps. */
  const appPods = async (): Promise<Map<string, Pod>> => {
    const out = new Map<string, Pod>();
    for (const component of ['claim-controller', 'warmpool-driver']) {
      const live = (await pods(component))
        .filter((p) => !p.metadata.deletionTimestamp && p.status?.podIP)
        .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
      live.forEach((p, i) => out.set(i === 0 ? component : `${component}-${i}`, p));
    }
    for (const p of await pods('inventory-publisher'))
      if (!p.metadata.deletionTimestamp && p.status?.podIP) out.set(`inventory-publisher-${p.spec?.nodeName ?? ''}`, p);
    return out;
  };
  const servingCa = Buffer.from(ca.data['tls.crt'] as string, 'base64').toString('utf8');
  const metricsEndpoints = async (): Promise<Map<string, MetricsEndpoint>> =>
    new Map(
      [...(await appPods())].map(([app, p]) => {
        const url = `https://${p.status?.podIP}:${PORTS.metrics}/metrics`;
        // as the chart's ServiceMonitors: claim-controller's serving certificate is checked, the others' made at start are not
        return [app, /^claim-controller(-\d+)?$/.test(app) ? { url, ca: servingCa, servername: SERVICE_DNS('claim-controller') } : { url }];
      }),
    );
  const scraper = new MetricsScraper({
    kubeConfig,
    endpoints: metricsEndpoints,
    namespace: INSTALLED_NAMESPACE,
    name: `metrics-scraper-${runSuffix()}`,
    clusterRole: `${INSTALLED_RELEASE}-metrics-reader`,
  });
  /** One field of a component's leader Lease ('' when there is none). */
  const leaseField = async (component: LeaderComponent, field: 'holderIdentity' | 'acquireTime'): Promise<string> =>
    (
      await kubectl(['-n', INSTALLED_NAMESPACE, 'get', 'lease', LEASE_NAMES[component], '-o', `jsonpath={.spec.${field}}`]).catch(() => '')
    ).trim();
  const leaseHolderPod = async (component: LeaderComponent): Promise<string | undefined> => {
    const holder = await leaseField(component, 'holderIdentity');
    // holderIdentity is `<POD_NAME>_<suffix>`
    return holder.includes('_') ? holder.slice(0, holder.lastIndexOf('_')) : undefined;
  };

  /** The router Service's URL, once routerUrl() found it. */
  let routerBase: string | undefined;
  const target: SystemUnderTest = {
    target: 'installed',
    kubeconfigPath: state.kubeconfigPath,
    kubeConfig,
    binDir: state.binDir,
    fleetToken: state.fleetToken,
    nodes,
    get apiserverUrls() {
      return urls;
    },
    get apiserverUrl() {
      return urls[0] as string;
    },
    fastPathUrl,
    async e2bEndpoint() {
      // the chart's e2b Service (e2b.enabled in installed-values.ts), named as its certificate names it, at its cluster IP
      const svc = JSON.parse(await kubectl(['-n', INSTALLED_NAMESPACE, 'get', 'service', E2B_SERVICE_NAME, '-o', 'json'])) as {
        spec: { clusterIP: string; ports: { port: number }[] };
      };
      return { url: `https://${E2B_SERVICE_NAME}.${INSTALLED_NAMESPACE}.svc:${svc.spec.ports[0]?.port ?? 0}`, address: svc.spec.clusterIP };
    },
    async routerUrl() {
      // the chart's router Service (router.serviceName of installed-values.ts), reached at its cluster IP as the fast path is
      const svc = JSON.parse(await kubectl(['-n', INSTALLED_NAMESPACE, 'get', 'service', ROUTER_SERVICE_NAME, '-o', 'json'])) as {
        spec: { clusterIP: string; ports: { name?: string; port: number }[] };
      };
      const port = svc.spec.ports.find((p) => p.name === 'https')?.port ?? svc.spec.ports[0]?.port;
      routerBase = `https://${svc.spec.clusterIP}:${port}`;
      return routerAnswering(routerBase, servingCa, ROUTER_DNS);
    },
    fastPathUrls: async () =>
      (await pods('claim-controller'))
        .filter((p) => isReady(p) && !p.metadata.deletionTimestamp && p.status?.podIP)
        .map((p) => `https://${p.status?.podIP}:${PORTS.fastPath}`)
        .sort(),
    servingCa,
    clusterCa: state.clusterCa,
    frontProxyClient: state.frontProxyClient,
    auditLogPath: state.auditLogPath,
    publisherNamespace: NODE_NAMESPACE,
    servernameOf(url) {
      if (url.startsWith(fastPathUrl) || new RegExp(`^https://[\\d.]+:${PORTS.fastPath}(/|$)`).test(url))
        return SERVICE_DNS('claim-controller');
      // the router Service's cluster IP: sandbox-apiserver's certificate names the router Service too
      if (routerBase !== undefined && (url === routerBase || url.startsWith(`${routerBase}/`))) return ROUTER_DNS;
      // a replica's pod address: its certificate names the Service
      return new RegExp(`^https://[\\d.]+:${PORTS.apiserver}(/|$)`).test(url) ? SERVICE_DNS('sandbox-apiserver') : undefined;
    },
    createNamespace: (name) => ensureNamespace(target, name),
    tenant: (namespace, name) => tenantCredentials(target, dir, namespace, name),
    async leaderOf(component) {
      const pod = await leaseHolderPod(component);
      if (pod === undefined) return undefined;
      const live = (await pods()).find((p) => p.metadata.name === pod && !p.metadata.deletionTimestamp);
      return live ? pod : undefined;
    },
    async leaderSince(component) {
      const at = await leaseField(component, 'acquireTime');
      return at === '' ? undefined : new Date(at);
    },
    async killLeader(component) {
      const pod = await leaseHolderPod(component);
      if (pod === undefined) throw new Error(`nobody holds the ${LEASE_NAMES[component]} Lease`);
      await kubectl(['-n', INSTALLED_NAMESPACE, 'delete', 'pod', pod, '--grace-period=0', '--force', '--wait=false']);
      return pod;
    },
    async restartApiserverReplica(o = {}) {
      const before = (await pods('sandbox-apiserver')).filter((p) => !p.metadata.deletionTimestamp);
      // the oldest: restarts in a row go through every replica, as a rolling restart does
      const victim = before.sort((a, b) => (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? ''))[0]
        ?.metadata.name;
      if (!victim) throw new Error('no sandbox-apiserver pod to delete');
      await kubectl(['-n', INSTALLED_NAMESPACE, 'delete', 'pod', victim, '--wait=false']);
      await o.whileDown?.();
      // its replacement Ready beside the other replica, and the APIService Available again
      await eventually(
        async () => {
          const now = await pods('sandbox-apiserver');
          if (now.some((p) => p.metadata.name === victim)) throw new Error(`${victim} is not gone yet`);
          if (now.filter(isReady).length < before.length)
            throw new Error(`${now.filter(isReady).length}/${before.length} sandbox-apiserver pods Ready`);
        },
        { timeoutMs: 180_000, intervalMs: 1000 },
      );
      await waitInstalled((args) => kubectl(args), 180_000);
      urls = await apiserverUrls();
    },
    metricsEndpoints,
    scrapeMetrics: (app, o) => scraper.scrape(app, o),
    metricsReaderToken: () => scraper.readerToken(),
    async probeUrls() {
      return new Map([...(await appPods())].map(([app, p]) => [app, `http://${p.status?.podIP}:${PORTS.health}`]));
    },
    async appLogs() {
      const logs = new Map<string, string>();
      for (const p of await pods()) {
        for (const previous of [false, true]) {
          const text = await kubectl([
            '-n',
            p.metadata.namespace ?? INSTALLED_NAMESPACE,
            'logs',
            p.metadata.name,
            '--all-containers',
            ...(previous ? ['--previous'] : []),
          ]).catch(() => '');
          if (text) logs.set(`${p.metadata.name}${previous ? '.previous' : ''}`, text);
        }
      }
      return logs;
    },
    async claimRefKeys() {
      const secret = z
        .object({ data: z.object({ key: z.string() }) })
        .parse(JSON.parse(await kubectl(['-n', INSTALLED_NAMESPACE, 'get', 'secret', CLAIM_REF_KEY_SECRET, '-o', 'json'])));
      return keyringKeys(Buffer.from(secret.data.key, 'base64').toString('utf8'));
    },
    async setClaimRefKeys(keys) {
      // as an operator rotating by hand would: the Secret's data, which the kubelet carries to each pod's mount
      const patch = { data: { key: Buffer.from(`${keys.join('\n')}\n`).toString('base64') } };
      await kubectl(['-n', INSTALLED_NAMESPACE, 'patch', 'secret', CLAIM_REF_KEY_SECRET, '--type=merge', '-p', JSON.stringify(patch)]);
    },
    async appsThatExited() {
      return (await pods())
        .filter((p) => restartsOf(p) > (baseline.get(p.metadata.name) ?? 0))
        .map((p) => `${p.metadata.name} (${restartsOf(p)} restarts)`);
    },
    async stop() {
      await scraper.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return target;
}

function restartsOf(p: Pod): number {
  return (p.status?.containerStatuses ?? []).reduce((n, c) => n + c.restartCount, 0);
}

/** Writes the state file the suites connect with, and points the env (inherited by jest workers) at it. */
export function publishInstalledState(dir: string, state: InstalledState): void {
  const path = join(dir, 'installed-state.json');
  writeFileSync(path, JSON.stringify(state), { mode: 0o600 });
  process.env[INSTALLED_STATE_ENV] = path;
}
