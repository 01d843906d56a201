import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCA, createLeaf, kubectl } from '@sandbox-scale/e2e';

export const API_SERVICE = 'v1beta1.agents.x-k8s.io';

export interface ServingCertFiles {
  readonly cert: string;
  readonly key: string;
  /** PEM of the CA that signed the cert: the APIService caBundle. */
  readonly caPem: string;
}

/** A serving cert for sandbox-apiserver.<ns>.svc (what the aggregator dials) and localhost. */
export async function writeServingCert(suffix: string, namespace: string): Promise<ServingCertFiles> {
  const ca = await createCA(`sbapi-ca-${suffix}`);
  const leaf = await createLeaf(ca, {
    commonName: 'sandbox-apiserver',
    dnsNames: [`sandbox-apiserver.${namespace}.svc`, 'localhost'],
    ips: ['127.0.0.1'],
    server: true,
  });
  const cert = join(tmpdir(), `sbapi-${suffix}.crt`);
  const key = join(tmpdir(), `sbapi-${suffix}.key`);
  writeFileSync(cert, leaf.cert);
  writeFileSync(key, leaf.key);
  return { cert, key, caPem: ca.cert };
}

export interface RegisterOptions {
  readonly namespace: string;
  readonly port: number;
  readonly caPem: string;
  readonly groupPriorityMinimum?: number;
  readonly versionPriority?: number;
  /** A private control plane's kubeconfig; the shared test cluster's when absent. */
  readonly kubeconfig?: string;
}

/**
 * The ExternalName Service `sandbox-apiserver` → localhost and the APIService pointing at it
 * (the aggregator's default routing resolves it to 127.0.0.1:<port>).
 */
export async function registerApiService(o: RegisterOptions): Promise<void> {
  const svc = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'sandbox-apiserver', namespace: o.namespace },
    spec: { type: 'ExternalName', externalName: 'localhost' },
  };
  const apiService = {
    apiVersion: 'apiregistration.k8s.io/v1',
    kind: 'APIService',
    metadata: { name: API_SERVICE },
    spec: {
      group: 'agents.x-k8s.io',
      version: 'v1beta1',
      groupPriorityMinimum: o.groupPriorityMinimum ?? 1000,
      versionPriority: o.versionPriority ?? 15,
      service: { namespace: o.namespace, name: 'sandbox-apiserver', port: o.port },
      caBundle: Buffer.from(o.caPem).toString('base64'),
    },
  };
  const applied = await kubectl(['apply', '-f', '-'], {
    input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [svc, apiService] }),
    ...(o.kubeconfig ? { kubeconfig: o.kubeconfig } : {}),
  });
  if (applied.code !== 0) throw new Error(`registering ${API_SERVICE} failed: ${applied.stderr}`);
}
