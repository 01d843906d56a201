import { randomBytes } from 'node:crypto';
// What the benches that go through the aggregator share: a raw HTTPS client with the admin
// kubeconfig's client cert, a sandbox-apiserver started on a fresh serving cert, and the
// ExternalName Service + APIService that put it behind kube-apiserver.
import { writeFileSync } from 'node:fs';
import { Agent, request, type RequestOptions } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { createLogger } from '@sandbox-scale/kube-runtime';
import { createCA, createLeaf, eventually } from '@sandbox-scale/e2e';
import { startSandboxApiserver, type RunningSandboxApiserver } from '@sandbox-scale/sandbox-apiserver';
import { OwnerRefKey } from '@sandbox-scale/scale-core';

/** The key every process of this run proves claim references with. */
const CLAIM_REF_KEY = new OwnerRefKey(randomBytes(32));

export const p50 = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

export interface Reply {
  readonly status: number;
  readonly body: string;
}
export type Client = (method: string, path: string, body?: unknown, accept?: string) => Promise<Reply>;

/** Raw HTTPS with the admin client cert over kept-alive connections, to kube-apiserver or straight to our server. */
export async function httpsClient(kc: KubeConfig, maxSockets: number, direct?: { url: string; ca: string }): Promise<Client> {
  const base: RequestOptions = {};
  await kc.applyToHTTPSOptions(base);
  let server = new URL(kc.getCurrentCluster()?.server ?? '');
  if (direct !== undefined) {
    // our server verifies the admin client cert itself (the cluster's client CA)
    base.ca = direct.ca;
    // the serving cert names localhost; the listener is bound to 127.0.0.1
    base.servername = 'localhost';
    server = new URL(direct.url);
  }
  const agent = new Agent({ keepAlive: true, maxSockets });
  return (method, path, body, accept = 'application/json') =>
    new Promise((resolve, reject) => {
      const req = request(
        {
          ...base,
          agent,
          hostname: server.hostname,
          port: server.port,
          path,
          method,
          headers: { Accept: accept, 'Content-Type': 'application/json' },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        },
      );
      req.on('error', reject);
      req.end(body === undefined ? undefined : JSON.stringify(body));
    });
}

export interface ServingCert {
  /** PEM of the CA that signed the cert: the APIService caBundle. */
  readonly caCert: string;
  readonly certFile: string;
  readonly keyFile: string;
}

/** A fresh CA and a serving cert for `sandbox-apiserver` (the Service name and localhost), written under tmp as `<name>.crt`/`.key`. */
export async function writeServingCert(name: string): Promise<ServingCert> {
  const ca = await createCA(`${name}-ca`);
  const leaf = await createLeaf(ca, {
    commonName: 'sandbox-apiserver',
    dnsNames: ['sandbox-apiserver.default.svc', 'localhost'],
    server: true,
  });
  const certFile = join(tmpdir(), `${name}.crt`);
  const keyFile = join(tmpdir(), `${name}.key`);
  writeFileSync(certFile, leaf.cert);
  writeFileSync(keyFile, leaf.key);
  return { caCert: ca.cert, certFile, keyFile };
}

/** A silent sandbox-apiserver on 127.0.0.1:`port` with `cert`, returned once its caches have synced. */
export async function startBenchApiserver(
  kubeConfig: KubeConfig,
  cert: ServingCert,
  port: number,
  fleetToken?: string,
): Promise<RunningSandboxApiserver> {
  const server = await startSandboxApiserver({
    claimRefKey: CLAIM_REF_KEY,
    kubeConfig,
    securePort: port,
    bindAddress: '127.0.0.1',
    tlsCertFile: cert.certFile,
    tlsPrivateKeyFile: cert.keyFile,
    ...(fleetToken === undefined ? {} : { fleetToken }),
    log: createLogger({ name: 'bench', level: 'silent' }),
  });
  await server.synced;
  return server;
}

/**
 * Puts the server on `port` behind kube-apiserver (an ExternalName Service to localhost and the
 * v1beta1.agents.x-k8s.io APIService with `caCert` as its bundle) and waits until the group answers through `api`.
 */
export async function registerApiService(
  kubectl: (args: string[]) => Promise<unknown>,
  api: Client,
  opts: { readonly name: string; readonly port: number; readonly caCert: string },
): Promise<void> {
  const svc = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'sandbox-apiserver', namespace: 'default' },
    spec: { type: 'ExternalName', externalName: 'localhost' },
  };
  const apisvc = {
    apiVersion: 'apiregistration.k8s.io/v1',
    kind: 'APIService',
    metadata: { name: 'v1beta1.agents.x-k8s.io' },
    spec: {
      group: 'agents.x-k8s.io',
      version: 'v1beta1',
      groupPriorityMinimum: 1000,
      versionPriority: 15,
      service: { namespace: 'default', name: 'sandbox-apiserver', port: opts.port },
      caBundle: Buffer.from(opts.caCert).toString('base64'),
    },
  };
  const manifest = join(tmpdir(), `${opts.name}-apiservice.json`);
  writeFileSync(manifest, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [svc, apisvc] }));
  await kubectl(['apply', '-f', manifest]);
  await eventually(
    async () => {
      if ((await api('GET', '/apis/agents.x-k8s.io/v1beta1')).status !== 200) throw new Error('APIService never became available');
    },
    { timeoutMs: 60_000, intervalMs: 500 },
  );
}
