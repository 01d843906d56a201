import { ApiregistrationV1Api, CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { createCA, createLeaf } from '../control-plane/pki';
import { freePort } from '../control-plane/ports';
import { ProcessGroup } from '../control-plane/process-group';
import { toolPath } from '../control-plane/tools';
import { eventually } from '../testing/eventually';

export const ADAPTER_NAMESPACE = 'monitoring';
export const ADAPTER_SERVICE = 'prometheus-adapter';
/** The APIService kube-apiserver routes /apis/external.metrics.k8s.io/v1beta1 through. */
export const EXTERNAL_METRICS_APISERVICE = 'v1beta1.external.metrics.k8s.io';

export interface PrometheusAdapterOptions {
  binDir: string;
  kubeConfig: KubeConfig;
  /** An admin kubeconfig file: the adapter lists namespaces and asks kube-apiserver who calls it. */
  kubeconfigPath: string;
  prometheusUrl: string;
  /** The adapter's `externalRules`. */
  externalRules: unknown[];
  /** How often the adapter lists the series its rules match (a series first seen waits for a relist). */
  relistIntervalSeconds: number;
}

export interface PrometheusAdapter {
  stop(): Promise<void>;
}

/**
 * sigs.k8s.io/prometheus-adapter (the binary `npm run tools -- monitoring` builds) serving
 * external.metrics.k8s.io, registered with kube-apiserver as an APIService, as its chart
 * registers it: an ExternalName Service to this machine (the aggregator dials localhost:<port>
 * and checks the serving certificate against the APIService's caBundle under the Service's DNS name).
 */
export async function startPrometheusAdapter(o: PrometheusAdapterOptions): Promise<PrometheusAdapter> {
  const dir = mkdtempSync(join(tmpdir(), 'sandbox-scale-prometheus-adapter-'));
  const group = new ProcessGroup(dir);
  const port = await freePort();
  const ca = await createCA('prometheus-adapter-ca');
  const serving = await createLeaf(ca, {
    commonName: ADAPTER_SERVICE,
    dnsNames: [`${ADAPTER_SERVICE}.${ADAPTER_NAMESPACE}.svc`, 'localhost'],
    ips: ['127.0.0.1'],
    server: true,
  });
  const files = { cert: join(dir, 'serving.crt'), key: join(dir, 'serving.key'), config: join(dir, 'config.yaml') };
  writeFileSync(files.cert, serving.cert);
  writeFileSync(files.key, serving.key, { mode: 0o600 });
  writeFileSync(files.config, stringify({ externalRules: o.externalRules }));
  let exited: string | undefined;
  group.start(
    'prometheus-adapter',
    toolPath(o.binDir, 'prometheus-adapter'),
    [
      `--prometheus-url=${o.prometheusUrl}/`,
      `--config=${files.config}`,
      `--metrics-relist-interval=${o.relistIntervalSeconds}s`,
      `--lister-kubeconfig=${o.kubeconfigPath}`,
      `--authentication-kubeconfig=${o.kubeconfigPath}`,
      `--authorization-kubeconfig=${o.kubeconfigPath}`,
      '--bind-address=127.0.0.1',
      `--secure-port=${port}`,
      `--tls-cert-file=${files.cert}`,
      `--tls-private-key-file=${files.key}`,
      '--v=2',
    ],
    (code, logPath) => (exited = `prometheus-adapter exited with code ${code}; its log: ${logPath}`),
  );
  const core = o.kubeConfig.makeApiClient(CoreV1Api);
  const registration = o.kubeConfig.makeApiClient(ApiregistrationV1Api);
  try {
    await core.createNamespace({ body: { metadata: { name: ADAPTER_NAMESPACE } } }).catch((err: unknown) => {
      if ((err as { code?: number }).code !== 409) throw err;
    });
    await core.createNamespacedService({
      namespace: ADAPTER_NAMESPACE,
      body: {
        metadata: { name: ADAPTER_SERVICE },
        spec: { type: 'ExternalName', externalName: 'localhost', ports: [{ name: 'https', port, protocol: 'TCP' }] },
      },
    });
    await registration.createAPIService({
      body: {
        metadata: { name: EXTERNAL_METRICS_APISERVICE },
        spec: {
          group: 'external.metrics.k8s.io',
          version: 'v1beta1',
          groupPriorityMinimum: 100,
          versionPriority: 100,
          service: { namespace: ADAPTER_NAMESPACE, name: ADAPTER_SERVICE, port },
          caBundle: Buffer.from(ca.cert).toString('base64'),
        },
      },
    });
    await eventually(
      async () => {
        if (exited) throw new Error(exited);
        const svc = await registration.readAPIService({ name: EXTERNAL_METRICS_APISERVICE });
        const available = svc.status?.conditions?.find((c) => c.type === 'Available');
        if (available?.status !== 'True')
          throw new Error(`${EXTERNAL_METRICS_APISERVICE} not Available: ${available?.message ?? 'no condition yet'}`);
      },
      { timeoutMs: 90_000, intervalMs: 250 },
    );
  } catch (err) {
    await group.stop();
    throw err;
  }
  return {
    stop: async () => {
      await registration.deleteAPIService({ name: EXTERNAL_METRICS_APISERVICE }).catch(() => undefined);
      await core.deleteNamespacedService({ namespace: ADAPTER_NAMESPACE, name: ADAPTER_SERVICE }).catch(() => undefined);
      await group.stop();
    },
  };
}
