import { ApiextensionsV1Api, AuthenticationV1Api, CoreV1Api, KubeConfig, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import { applyObject, type ApplyBody, kubeApiClient } from '@sandbox-scale/kube-runtime';
import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { BIN_DIR_ENV, FILES_ENV, KUBECONFIG_ENV } from '../control-plane/global-setup';
import { HELM_TEMPLATE_KUBE_VERSION } from '../control-plane/kube-version';
import { runProcess, type RunResult } from '../system/run-command';
import { eventually } from './eventually';

/** Admin KubeConfig of the control plane this jest run shares. */
export function testKubeConfig(): KubeConfig {
  const path = process.env[KUBECONFIG_ENV];
  if (!path) throw new Error(`${KUBECONFIG_ENV} is not set: run integration tests with jest -c jest.int.config.cjs`);
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  return kc;
}

export function testKubeconfigPath(): string {
  const path = process.env[KUBECONFIG_ENV];
  if (!path) throw new Error(`${KUBECONFIG_ENV} is not set`);
  return path;
}

export function testBinDir(): string {
  const dir = process.env[BIN_DIR_ENV];
  if (!dir) throw new Error(`${BIN_DIR_ENV} is not set`);
  return dir;
}

export interface ControlPlaneInfo {
  caCert: string;
  caKey: string;
  frontProxyCaCert: string;
  server: string;
  dir: string;
}

export function testControlPlaneInfo(): ControlPlaneInfo {
  const path = process.env[FILES_ENV];
  if (!path) throw new Error(`${FILES_ENV} is not set`);
  return JSON.parse(readFileSync(path, 'utf8')) as ControlPlaneInfo;
}

/** A short random suffix for cluster-scoped names, so runs never collide. */
export function runSuffix(): string {
  return randomBytes(3).toString('hex');
}

export async function createTestNamespace(kc: KubeConfig, prefix: string): Promise<string> {
  const name = `t-${prefix}-${runSuffix()}`.slice(0, 63);
  await kubeApiClient(kc, CoreV1Api).createNamespace({ body: { metadata: { name } } });
  return name;
}

export async function deleteNamespace(kc: KubeConfig, name: string): Promise<void> {
  try {
    await kubeApiClient(kc, CoreV1Api).deleteNamespace({ name });
  } catch {
    /* already gone */
  }
}

const CRD_RESOURCE = {
  group: 'apiextensions.k8s.io',
  version: 'v1',
  plural: 'customresourcedefinitions',
  namespaced: false,
  kind: 'CustomResourceDefinition',
};

/** Applies every CRD in `dir` (or the given objects) and waits until each is Established. */
export async function applyCrds(kc: KubeConfig, dirOrCrds: string | V1CustomResourceDefinition[]): Promise<string[]> {
  const crds: V1CustomResourceDefinition[] =
    typeof dirOrCrds === 'string'
      ? readdirSync(dirOrCrds)
          .filter((f) => /\.ya?ml$/.test(f))
          .flatMap((f) =>
            parseAllDocuments(readFileSync(join(dirOrCrds, f), 'utf8'))
              .map((d) => d.toJSON() as V1CustomResourceDefinition)
              .filter(Boolean),
          )
      : dirOrCrds;
  // raw JSON, not client-node's typed serializer: that one drops wire-named keys such as
  // x-kubernetes-preserve-unknown-fields, and the server would then prune those fields.
  for (const crd of crds) {
    await applyObject(kc, crd as unknown as ApplyBody, { fieldManager: 'sandbox-scale/e2e', force: true, resource: CRD_RESOURCE });
  }
  const ext = kubeApiClient(kc, ApiextensionsV1Api);
  const names = crds.map((c) => c.metadata?.name as string);
  await Promise.all(
    names.map((name) =>
      eventually(
        async () => {
          const crd = await ext.readCustomResourceDefinition({ name });
          const established = crd.status?.conditions?.find((c) => c.type === 'Established');
          if (established?.status !== 'True') throw new Error(`CRD ${name} not Established yet`);
        },
        { timeoutMs: 30_000 },
      ),
    ),
  );
  return names;
}

/**
 * A kubeconfig with exactly a ServiceAccount's permissions: a TokenRequest token on the same
 * server and CA as `kc`. With `boundNode`, the token is bound to that Node (which must exist), so
 * kube-apiserver names the node in the caller's user extra (authentication.kubernetes.io/node-name)
 * as it does for a pod's token on that node.
 */
export async function kubeconfigForServiceAccount(
  kc: KubeConfig,
  namespace: string,
  name: string,
  expirationSeconds = 3600,
  boundNode?: string,
): Promise<KubeConfig> {
  const core = kubeApiClient(kc, CoreV1Api);
  try {
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
  } catch (err) {
    if ((err as { code?: number }).code !== 409) throw err;
  }
  const boundObjectRef = boundNode === undefined ? undefined : { apiVersion: 'v1', kind: 'Node', name: boundNode };
  const tr = await core.createNamespacedServiceAccountToken({
    namespace,
    name,
    body: { spec: { audiences: [], expirationSeconds, ...(boundObjectRef ? { boundObjectRef } : {}) } },
  });
  const token = tr.status?.token;
  if (!token) throw new Error(`TokenRequest for ${namespace}/${name} returned no token`);
  return tokenKubeConfig(kc, token, `system:serviceaccount:${namespace}:${name}`);
}

/** A kubeconfig on the same server and CA as `kc` whose only credential is a bearer token. */
export function tokenKubeConfig(kc: KubeConfig, token: string, user = 'token'): KubeConfig {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  const out = new KubeConfig();
  out.loadFromOptions({
    clusters: [{ ...cluster, name: 'local' }],
    users: [{ name: user, token }],
    contexts: [{ name: user, cluster: 'local', user }],
    currentContext: user,
  });
  return out;
}

/**
 * A TokenRequest token of a ServiceAccount (created when missing) for the given audiences;
 * [] means the API server's own audience.
 */
export async function serviceAccountToken(
  kc: KubeConfig,
  namespace: string,
  name: string,
  audiences: string[],
  expirationSeconds = 3600,
): Promise<string> {
  const core = kubeApiClient(kc, CoreV1Api);
  try {
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
  } catch (err) {
    if ((err as { code?: number }).code !== 409) throw err;
  }
  const tr = await core.createNamespacedServiceAccountToken({ namespace, name, body: { spec: { audiences, expirationSeconds } } });
  const token = tr.status?.token;
  if (!token) throw new Error(`TokenRequest for ${namespace}/${name} returned no token`);
  return token;
}

/** Serialises a KubeConfig to a YAML/JSON string usable as a kubeconfig file. */
export function kubeconfigText(kc: KubeConfig): string {
  return kc.exportConfig();
}

export function whoAmI(kc: KubeConfig): Promise<string | undefined> {
  return kubeApiClient(kc, AuthenticationV1Api)
    .createSelfSubjectReview({ body: {} })
    .then((r) => r.status?.userInfo?.username);
}

export type { RunResult };

/** Runs a CLI (kubectl, helm) from the tools dir and resolves with its exit code and output. */
export function runTool(tool: 'kubectl' | 'helm', args: string[], env: Record<string, string> = {}, input?: string): Promise<RunResult> {
  const full =
    tool === 'helm' && args[0] === 'template' && !args.includes('--kube-version') ? [...args, ...HELM_TEMPLATE_KUBE_VERSION] : args;
  return runProcess(join(testBinDir(), tool), full, { KUBECONFIG: testKubeconfigPath(), ...env }, input);
}

export function kubectl(args: string[], opts: { kubeconfig?: string; input?: string } = {}): Promise<RunResult> {
  return runTool('kubectl', args, opts.kubeconfig ? { KUBECONFIG: opts.kubeconfig } : {}, opts.input);
}

/** kubectl that must succeed: a non-zero exit throws with the command and its stderr. */
export async function kubectlOk(args: string[], opts: { kubeconfig?: string; input?: string } = {}): Promise<RunResult> {
  const r = await kubectl(args, opts);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
  return r;
}

/** `kubectl … -o json`, parsed. */
export async function kubectlJson<T>(args: string[], opts: { kubeconfig?: string } = {}): Promise<T> {
  return JSON.parse((await kubectlOk([...args, '-o', 'json'], opts)).stdout) as T;
}
