import { CoreV1Api } from '@kubernetes/client-node';
import { kubeApiClient } from '@sandbox-scale/kube-runtime';
import { readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { kubeconfigForServiceAccount, runSuffix } from '../testing/cluster';
import { MetricsScraper, type MetricsEndpoint } from '../testing/metrics-scraper';
import { eventually } from '../testing/eventually';
import { RELEASE, SYSTEM_NAMESPACE, type LocalSystem } from './local-system';
import { keyringKeys, type SystemUnderTest, type TenantCredentials } from './system-under-test';

/** Creates a namespace; one that exists already is fine. */
export async function ensureNamespace(sys: Pick<SystemUnderTest, 'kubeConfig'>, name: string): Promise<void> {
  try {
    await kubeApiClient(sys.kubeConfig, CoreV1Api).createNamespace({ body: { metadata: { name } } });
  } catch (err) {
    if ((err as { code?: number }).code !== 409) throw err;
  }
}

/** A ServiceAccount's kubeconfig written under `dir`, with its token. */
export async function tenantCredentials(
  sys: Pick<SystemUnderTest, 'kubeConfig'>,
  dir: string,
  namespace: string,
  name: string,
): Promise<TenantCredentials> {
  const kubeConfig = await kubeconfigForServiceAccount(sys.kubeConfig, namespace, name);
  const path = join(dir, `${namespace}.${name}.kubeconfig`);
  writeFileSync(path, kubeConfig.exportConfig(), { mode: 0o600 });
  return { kubeConfig, path, token: kubeConfig.getCurrentUser()?.token ?? '' };
}

/**
 * `url` once its /healthz answers 200 over TLS checked against `ca` (and `servername`): the router
 * listens a moment after sandbox-apiserver's secure port does.
 */
export async function routerAnswering(url: string, ca: string, servername: string | undefined): Promise<string> {
  const dispatcher = new Agent({ connect: { ca, ...(servername !== undefined ? { servername } : {}) } });
  try {
    await eventually(
      async () => {
        const res = await request(`${url}/healthz`, { dispatcher });
        await res.body.dump();
        if (res.statusCode !== 200) throw new Error(`${url}/healthz answered ${res.statusCode}`);
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
  } finally {
    await dispatcher.close();
  }
  return url;
}

/** The local system (apps as processes) seen through the suites' one interface. */
export function localTarget(sys: LocalSystem, opts: { auditLogPath?: string; onStop?: () => Promise<void> } = {}): SystemUnderTest {
  const cp = sys.controlPlane;
  const frontProxyClient = {
    cert: readFileSync(join(cp.dir, 'front-proxy-client.crt'), 'utf8'),
    key: readFileSync(join(cp.dir, 'front-proxy-client.key'), 'utf8'),
  };
  const servingCa = readFileSync(sys.servingCaPath, 'utf8');
  const metricsEndpoints = async (): Promise<Map<string, MetricsEndpoint>> =>
    new Map(
      [...sys.metricsUrls].map(([app, url]) => [
        app,
        // claim-controller serves metrics with the serving certificate (localhost); the others with one they made at start
        /^claim-controller(-\d+)?$/.test(app) ? { url, ca: servingCa, servername: 'localhost' } : { url },
      ]),
    );
  const scraper = new MetricsScraper({
    kubeConfig: sys.kubeConfig,
    endpoints: metricsEndpoints,
    namespace: SYSTEM_NAMESPACE,
    name: `metrics-scraper-${runSuffix()}`,
    clusterRole: `${RELEASE}-metrics-reader`,
  });
  const target: SystemUnderTest = {
    target: 'local',
    kubeconfigPath: sys.kubeconfigPath,
    kubeConfig: sys.kubeConfig,
    binDir: cp.binDir,
    fleetToken: sys.fleetToken,
    nodes: sys.nodes,
    apiserverUrls: sys.apiserverUrls,
    apiserverUrl: sys.apiserverUrl,
    fastPathUrl: sys.fastPathUrl,
    fastPathUrls: () => Promise.resolve(sys.fastPathUrls),
    // the local certificate names 127.0.0.1, where the router listens
    routerUrl: () => routerAnswering(sys.routerUrls[0] ?? '', servingCa, undefined),
    e2bEndpoint: () => Promise.resolve({ url: sys.e2bUrls[0] ?? '' }),
    servingCa,
    clusterCa: { cert: readFileSync(cp.files.caCert, 'utf8'), key: readFileSync(cp.files.caKey, 'utf8') },
    frontProxyClient,
    auditLogPath: opts.auditLogPath,
    publisherNamespace: SYSTEM_NAMESPACE,
    // the local serving certificate names localhost (and 127.0.0.1), where the local servers listen
    servernameOf: (url) => ([...sys.apiserverUrls, ...sys.fastPathUrls].some((u) => url.startsWith(u)) ? 'localhost' : undefined),
    createNamespace: (name) => ensureNamespace(target, name),
    tenant: (namespace, name) => tenantCredentials(target, sys.logDir, namespace, name),
    leaderOf: (component) => sys.leaderOf(component),
    leaderSince: (component) => sys.leaderSince(component),
    async killLeader(component) {
      const leader = await sys.leaderOf(component);
      if (leader === undefined) throw new Error(`no ${component} process holds its Lease`);
      // the Deployment's part: a SIGKILLed replica comes back with the same flags
      await sys.restartApp(leader as Parameters<LocalSystem['restartApp']>[0], { kill: true });
      return leader;
    },
    async restartApiserverReplica(o = {}) {
      await sys.restartApp('sandbox-apiserver', { beforeStart: o.whileDown });
    },
    metricsEndpoints,
    scrapeMetrics: (app, o) => scraper.scrape(app, o),
    metricsReaderToken: () => scraper.readerToken(),
    probeUrls: async () => new Map(sys.probeUrls),
    async appLogs() {
      const logs = new Map<string, string>();
      for (const f of readdirSync(sys.logDir)) logs.set(f.replace(/\.log$/, ''), readFileSync(join(sys.logDir, f), 'utf8'));
      return logs;
    },
    claimRefKeys: async () => keyringKeys(readFileSync(sys.claimRefKeyFile, 'utf8')),
    async setClaimRefKeys(keys) {
      // written whole, then renamed over, as a Secret volume swaps its files
      writeFileSync(`${sys.claimRefKeyFile}.next`, `${keys.join('\n')}\n`, { mode: 0o600 });
      renameSync(`${sys.claimRefKeyFile}.next`, sys.claimRefKeyFile);
    },
    appsThatExited: async () => [...sys.apps].filter(([, a]) => a.restarts > 0 || !a.running).map(([n]) => n),
    async stop() {
      await scraper.close();
      await sys.stop();
      await opts.onStop?.();
    },
  };
  return target;
}
