import { mkdtempSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AuthenticationV1Api, KubeConfig } from '@kubernetes/client-node';
import {
  createLeaf,
  createTestNamespace,
  eventually,
  deleteNamespace,
  serviceAccountToken,
  testControlPlaneInfo,
  testKubeConfig,
} from '@sandbox-scale/e2e';
import { z } from 'zod';
import { closeKubeTransport, KubeListWatcher, kubeApiClient, kubeAuthorization, kubeRequest, kubeTransportStats } from '../src/index';

const admin = testKubeConfig();
const dir = mkdtempSync(join(tmpdir(), 'kube-transport-'));
let ns: string;

const ReviewSchema = z.object({ status: z.object({ userInfo: z.object({ username: z.string() }) }) });

/** Who the API server says `kc` is, by a raw SelfSubjectReview through kubeRequest. */
async function whoAmI(kc: KubeConfig): Promise<string> {
  const raw = await kubeRequest(kc, {
    method: 'POST',
    path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
  });
  return ReviewSchema.parse(raw).status.userInfo.username;
}

/** Replaces a file in one step, as kubelet swaps a projected token or cert-manager a certificate. */
function swapFile(path: string, text: string): void {
  writeFileSync(`${path}.new`, text, { mode: 0o600 });
  renameSync(`${path}.new`, path);
}

function kubeConfigWith(user: Parameters<KubeConfig['loadFromOptions']>[0]['users'][number]): KubeConfig {
  const cluster = admin.getCurrentCluster();
  if (!cluster) throw new Error('no cluster');
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ ...cluster, name: 'local' }],
    users: [user],
    contexts: [{ name: 'ctx', cluster: 'local', user: user.name }],
    currentContext: 'ctx',
  });
  return kc;
}

beforeAll(async () => {
  ns = await createTestNamespace(admin, 'kr-transport');
}, 60_000);

afterAll(async () => {
  await deleteNamespace(admin, ns);
});

describe('kept-alive transport against kube-apiserver', () => {
  it('sends 200 sequential calls of a client-certificate kubeconfig over a handful of TLS connections', async () => {
    const kc = testKubeConfig();
    try {
      for (let i = 0; i < 200; i++) await kubeRequest(kc, { method: 'GET', path: `/api/v1/namespaces/${ns}` });
      const { api } = kubeTransportStats(kc);
      console.log(`200 calls: ${api.requests} requests, ${api.connections} connections, ${api.handshakes} TLS handshakes`);
      expect(api.requests).toBe(200);
      expect(api.connections).toBeGreaterThanOrEqual(1);
      expect(api.connections).toBeLessThanOrEqual(3);
      expect(api.handshakes).toBeLessThanOrEqual(3);
    } finally {
      closeKubeTransport(kc);
    }
  });

  it('sends typed API calls over the same pool, as the client certificate', async () => {
    const kc = testKubeConfig();
    try {
      await whoAmI(kc);
      const before = kubeTransportStats(kc).api;
      const authn = kubeApiClient(kc, AuthenticationV1Api);
      for (let i = 0; i < 20; i++)
        expect((await authn.createSelfSubjectReview({ body: {} })).status?.userInfo?.username).toBe('sandbox-scale-admin');
      const after = kubeTransportStats(kc).api;
      expect(after.requests - before.requests).toBe(20);
      expect(after.connections - before.connections).toBeLessThanOrEqual(1);
    } finally {
      closeKubeTransport(kc);
    }
  });

  it('uses a rotated token file on the very next call, over the kept-alive connection', async () => {
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, await serviceAccountToken(admin, ns, 'first', []), { mode: 0o600 });
    // what loadFromCluster builds for a pod's projected token
    const kc = kubeConfigWith({ name: 'sa', authProvider: { name: 'tokenFile', config: { tokenFile } } });
    try {
      expect(await whoAmI(kc)).toBe(`system:serviceaccount:${ns}:first`);
      swapFile(tokenFile, await serviceAccountToken(admin, ns, 'second', []));
      expect(await whoAmI(kc)).toBe(`system:serviceaccount:${ns}:second`);
      expect(await kubeAuthorization(kc)).toMatch(/^Bearer /);
      const { api } = kubeTransportStats(kc);
      expect(api.requests).toBe(2);
      expect(api.connections).toBe(1);
    } finally {
      closeKubeTransport(kc);
    }
  });

  it('follows a client certificate rotated on disk: the next call is the new identity, on a new connection', async () => {
    const info = testControlPlaneInfo();
    const ca = { cert: readFileSync(info.caCert, 'utf8'), key: readFileSync(info.caKey, 'utf8') };
    const [one, two] = await Promise.all([
      createLeaf(ca, { commonName: 'transport-one', client: true }),
      createLeaf(ca, { commonName: 'transport-two', client: true }),
    ]);
    const certFile = join(dir, 'client.crt');
    const keyFile = join(dir, 'client.key');
    writeFileSync(certFile, one.cert, { mode: 0o600 });
    writeFileSync(keyFile, one.key, { mode: 0o600 });
    const kc = kubeConfigWith({ name: 'cert', certFile, keyFile });
    try {
      expect(await whoAmI(kc)).toBe('transport-one');
      expect(await whoAmI(kc)).toBe('transport-one');
      swapFile(certFile, two.cert);
      swapFile(keyFile, two.key);
      expect(await whoAmI(kc)).toBe('transport-two');
      const { api } = kubeTransportStats(kc);
      expect(api.requests).toBe(3);
      expect(api.connections).toBe(2);
    } finally {
      closeKubeTransport(kc);
    }
  });

  it('holds watches in their own pool, beside the short calls', async () => {
    const kc = testKubeConfig();
    const lw = new KubeListWatcher(
      kc,
      { group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap', namespaced: true },
      { namespace: ns },
    );
    const stop = new AbortController();
    const seen: string[] = [];
    try {
      const { resourceVersion } = await lw.list(stop.signal);
      const watching = lw.watch({
        resourceVersion,
        signal: stop.signal,
        onEvent: (type, obj) => seen.push(`${type} ${(obj as { metadata?: { name?: string } }).metadata?.name ?? ''}`),
      });
      await eventually(async () => expect(kubeTransportStats(kc).watch.connections).toBe(1));
      for (let i = 0; i < 5; i++)
        await kubeRequest(kc, {
          method: 'POST',
          path: `/api/v1/namespaces/${ns}/configmaps`,
          body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `watched-${i}` } },
        });
      await eventually(async () => expect(seen).toEqual(expect.arrayContaining(['ADDED watched-4'])));
      stop.abort();
      expect(await watching).toBe('ended');
      const { api, watch } = kubeTransportStats(kc);
      expect(watch.requests).toBe(1);
      expect(api.requests).toBe(6);
      expect(api.connections).toBe(1);
    } finally {
      stop.abort();
      closeKubeTransport(kc);
    }
  });
});
