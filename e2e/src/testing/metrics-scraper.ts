import { RbacAuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { Agent, request } from 'undici';
import { serviceAccountToken } from './cluster';

/**
 * Where an app serves /metrics and how its certificate is checked. `ca` (with `servername`):
 * the chart's serving certificate, checked as the ServiceMonitor checks it; absent: a
 * certificate the app made itself at start, which nobody holds a CA for, so it is not verified
 * (the ServiceMonitor's insecureSkipVerify). Either way the token goes over TLS only.
 */
export interface MetricsEndpoint {
  readonly url: string;
  readonly ca?: string;
  readonly servername?: string;
}

export interface MetricsPage {
  readonly status: number;
  readonly text: string;
}

/** GET /metrics as Prometheus scrapes it: HTTPS, with `Authorization: Bearer <token>` when a token is given. */
export async function scrapeMetrics(endpoint: MetricsEndpoint, token: string | undefined): Promise<MetricsPage> {
  const dispatcher = new Agent({
    connect: endpoint.ca !== undefined ? { ca: endpoint.ca, servername: endpoint.servername } : { rejectUnauthorized: false },
  });
  try {
    const r = await request(endpoint.url, { dispatcher, headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });
    return { status: r.statusCode, text: await r.body.text() };
  } finally {
    await dispatcher.close();
  }
}

export interface MetricsReader {
  /** A bearer token of the ServiceAccount (kube-apiserver's audience, as a projected token of a Prometheus pod). */
  readonly token: string;
  /** Deletes the ClusterRoleBinding (the ServiceAccount goes with its namespace). */
  remove(): Promise<void>;
}

/**
 * A ServiceAccount bound to the chart's metrics-reader ClusterRole (get on the non-resource URL
 * /metrics), as `metrics.readerSubjects` binds a Prometheus: the scraper every metrics read of
 * the suites goes through. The binding is named after the ServiceAccount, so suites running at
 * once never share one.
 */
export async function bindMetricsReader(
  kc: KubeConfig,
  o: { namespace: string; name: string; clusterRole: string },
): Promise<MetricsReader> {
  const token = await serviceAccountToken(kc, o.namespace, o.name, []);
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  const binding = `${o.namespace}-${o.name}-metrics-reader`.slice(0, 253);
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: binding },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: o.clusterRole },
      subjects: [{ kind: 'ServiceAccount', name: o.name, namespace: o.namespace }],
    },
  });
  return {
    token,
    remove: async () => {
      await rbac.deleteClusterRoleBinding({ name: binding }).catch((err: unknown) => {
        if ((err as { code?: number }).code !== 404) throw err;
      });
    },
  };
}

export class NoMetricsEndpointError extends Error {
  override readonly name = 'NoMetricsEndpointError';
}
export const isNoMetricsEndpointError = (e: unknown): e is NoMetricsEndpointError => e instanceof NoMetricsEndpointError;

/**
 * The scrapes of one system under test: each app's endpoint looked up at the time of the scrape
 * (a restarted app serves on another address), with the reader's token unless told otherwise;
 * the reader is made on the first scrape and removed by `close`.
 */
export class MetricsScraper {
  #reader: Promise<MetricsReader> | undefined;

  constructor(
    private readonly o: {
      kubeConfig: KubeConfig;
      endpoints: () => Promise<Map<string, MetricsEndpoint>>;
      /** Where the reader ServiceAccount is made, and its name. */
      namespace: string;
      name: string;
      clusterRole: string;
    },
  ) {}

  /** The token of a ServiceAccount the chart's metrics-reader ClusterRole is bound to. */
  async readerToken(): Promise<string> {
    this.#reader ??= bindMetricsReader(this.o.kubeConfig, {
      namespace: this.o.namespace,
      name: this.o.name,
      clusterRole: this.o.clusterRole,
    });
    return (await this.#reader).token;
  }

  /** `token`: default the reader's; null sends none. */
  async scrape(app: string, opts: { token?: string | null } = {}): Promise<MetricsPage> {
    const endpoint = (await this.o.endpoints()).get(app);
    if (endpoint === undefined) throw new NoMetricsEndpointError(`${app} serves no /metrics yet`);
    const token = opts.token === null ? undefined : (opts.token ?? (await this.readerToken()));
    return scrapeMetrics(endpoint, token);
  }

  async close(): Promise<void> {
    const reader = this.#reader;
    this.#reader = undefined;
    if (reader !== undefined) await (await reader.catch(() => undefined))?.remove();
  }
}
