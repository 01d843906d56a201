import { X509Certificate } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { request } from 'node:https';
import { connect as tlsConnect, type PeerCertificate, type TLSSocket } from 'node:tls';
import { ROTATE_CA_ANNOTATION, ROTATE_KEY_ANNOTATION } from '@sandbox-scale/kube-runtime';
import { eventually, kubectlJson, kubectlOk, runSuffix } from '../src/index';
import { INSTALLED_NAMESPACE, INSTALLED_RELEASE, installedPods } from '../src/installed/installed-system';
import { CA_ROTATION_OVERLAP } from '../src/installed/installed-values';
import { startSuiteSystem } from '../src/system/suite-system';
import type { SystemUnderTest } from '../src/system/system-under-test';
import { waitReplicasHold } from '../src/testing/claim-ref-keys';
import { kubeRaw, kubeStream } from '../src/testing/data-plane-requests';

// The chart's CA rotated on the installed chart while clients work: the APIService lists and
// watches through kube-apiserver (which trusts the caBundle), and a fast-path client that reads
// the CA bundle from the serving Secret, as a pod mounting it would, calls the fast path on a new
// connection each time. Every listener reads its files again and every client its CA bundle, so
// no request fails, new connections end up on the new certificate and no pod restarts.

const ns = `t-rotate-${runSuffix()}`;
const CA_SECRET = `${INSTALLED_RELEASE}-ca`;
const FAST_PATH_SECRET = `${INSTALLED_RELEASE}-claim-controller-serving`;
const KEY_SECRET = `${INSTALLED_RELEASE}-claim-ref-key`;
let sys: SystemUnderTest;

interface Secret {
  metadata: { annotations?: Record<string, string> };
  data: Record<string, string>;
}
type Pod = { metadata: { name: string }; status?: { containerStatuses?: { restartCount: number }[] } };

const kube = { kubeconfig: '' };
const secret = (name: string): Promise<Secret> => kubectlJson<Secret>(['-n', INSTALLED_NAMESPACE, 'get', 'secret', name], kube);
const text = (s: Secret, key: string): string => Buffer.from(s.data[key] ?? '', 'base64').toString('utf8');
/** Restarts of every pod, the control plane's and the node side's (the publisher follows the CA through the APIService). */
const restarts = async (): Promise<Record<string, number>> => {
  const pods = await installedPods<Pod>(async (args) => (await kubectlOk(args, kube)).stdout);
  return Object.fromEntries(
    pods.map((p) => [p.metadata.name, (p.status?.containerStatuses ?? []).reduce((n, c) => n + c.restartCount, 0)]),
  );
};

/** The certificate a new TLS connection to `url` is served, checked against `ca` under `servername`. */
function presented(url: string, ca: string, servername: string | undefined): Promise<X509Certificate> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const socket: TLSSocket = tlsConnect(
      { host: u.hostname, port: Number(u.port || 443), ca, ...(servername ? { servername } : {}) },
      () => {
        const cert: PeerCertificate = socket.getPeerCertificate();
        socket.destroy();
        resolve(new X509Certificate(cert.raw));
      },
    );
    socket.on('error', reject);
  });
}

beforeAll(async () => {
  sys = await startSuiteSystem({ namespaces: [ns] });
  kube.kubeconfig = sys.kubeconfigPath;
}, 120_000);

afterAll(async () => {
  await sys?.stop();
});

describe("the chart's claim-reference key and CA, rotated while clients work", () => {
  // first: the CA rotation below leaves this suite's clients trusting a CA the servers no longer serve
  it("rotates the claim-reference key on request through warmpool-driver's leader: each replica holds the new key before it signs, and no pod restarts", async () => {
    const podsBefore = await restarts();
    const keysOf = async (): Promise<{ keys: string[]; step: string | undefined }> => {
      const s = await secret(KEY_SECRET);
      return {
        keys: text(s, 'key')
          .split('\n')
          .map((l) => l.trim())
          .filter((l) => l !== ''),
        step: s.metadata.annotations?.['sandbox-scale.io/key-rotation'],
      };
    };
    const before = await keysOf();
    expect(before.step).toBeUndefined();
    await kubectlOk(
      ['-n', INSTALLED_NAMESPACE, 'annotate', 'secret', KEY_SECRET, `${ROTATE_KEY_ANNOTATION}=${runSuffix()}`, '--overwrite'],
      kube,
    );
    // step 1 at once (the leader watches the Secret): a new key joins last, verifying only
    let adding: string[] = [];
    await eventually(
      async () => {
        const now = await keysOf();
        expect(now.step).toBe('adding');
        adding = now.keys;
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    expect(adding.slice(0, -1)).toEqual(before.keys);
    expect(adding).toHaveLength(before.keys.length + 1);
    // every replica holds it while it only verifies (a replica that missed the step would be seen holding step 2's ring instead)
    const holding = await waitReplicasHold(sys, adding);
    // step 2 after the overlap: the new key signs, the old ones still verify (for certificates.claimRefKeyGrace)
    const signing = [adding[adding.length - 1] as string, ...before.keys];
    await eventually(async () => expect(await keysOf()).toEqual({ keys: signing, step: 'signing' }), {
      timeoutMs: 180_000,
      intervalMs: 1_000,
    });
    const signingEverywhere = await waitReplicasHold(sys, signing);
    const restarted = Object.entries(await restarts()).filter(([pod, n]) => n !== podsBefore[pod]).length;
    process.stdout.write(
      `[key-rotation] overlap ${CA_ROTATION_OVERLAP}; the new key verifying on ${holding} replicas, then signing on ${signingEverywhere}; ${restarted} pods restarted\n`,
    );
    expect(holding).toBeGreaterThanOrEqual(4);
    expect(signingEverywhere).toBe(holding);
    expect(restarted).toBe(0);
  }, 420_000);

  it('serves every list, watch and fast-path call through the three steps, ends on the new certificates and restarts no pod', async () => {
    // found now: the target checks the router with the CA it read at start, which the rotation replaces
    const routerUrl = await sys.routerUrl();
    const before = await secret(CA_SECRET);
    const oldCa = text(before, 'tls.crt');
    const podsBefore = await restarts();
    const counts = { lists: 0, fastPath: 0, oldLeaf: 0, newLeaf: 0 };
    const failures: string[] = [];
    let stopped = false;
    let newCa: string | undefined;

    // the fast path's client reads the bundle its Secret holds every second, as a mounted file is read
    let bundle = text(await secret(FAST_PATH_SECRET), 'ca.crt');
    const refresh = (async () => {
      while (!stopped) {
        bundle = text(await secret(FAST_PATH_SECRET), 'ca.crt');
        await new Promise((r) => setTimeout(r, 1_000));
      }
    })();
    const lists = (async () => {
      while (!stopped) {
        const r = await kubeRaw(sys.kubeConfig, { method: 'GET', path: `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes` }).catch(
          (err: unknown) => ({ status: 0, body: Buffer.from(String(err)) }),
        );
        counts.lists++;
        if (r.status !== 200) failures.push(`list: ${r.status} ${r.body.toString().slice(0, 200)}`);
        await new Promise((res) => setTimeout(res, 100));
      }
    })();
    const fastPathServername = sys.servernameOf(sys.fastPathUrl);
    const fastPath = (async () => {
      while (!stopped) {
        try {
          // a new connection each time, no credentials: the fast path answers 401 once TLS holds
          const { status, leaf } = await new Promise<{ status: number; leaf: X509Certificate }>((resolve, reject) => {
            const req = request(
              `${sys.fastPathUrl}/v1/claims`,
              { method: 'POST', ca: bundle, agent: false, ...(fastPathServername ? { servername: fastPathServername } : {}) },
              (res: IncomingMessage) => {
                const leafCert = new X509Certificate((res.socket as TLSSocket).getPeerCertificate().raw);
                res.resume();
                res.on('end', () => resolve({ status: res.statusCode ?? 0, leaf: leafCert }));
              },
            );
            req.on('error', reject);
            req.end('{}');
          });
          counts.fastPath++;
          if (status !== 401) failures.push(`fast path: ${status}`);
          if (leaf.verify(new X509Certificate(oldCa).publicKey)) counts.oldLeaf++;
          else if (newCa !== undefined && leaf.verify(new X509Certificate(newCa).publicKey)) counts.newLeaf++;
        } catch (err) {
          counts.fastPath++;
          failures.push(`fast path: ${String(err)}`);
        }
        await new Promise((res) => setTimeout(res, 200));
      }
    })();
    // a watch through the APIService held across the rotation: it must neither fail nor end
    const watch = await kubeStream(
      sys.kubeConfig,
      `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes?watch=true&timeoutSeconds=600`,
    );
    expect(watch.statusCode).toBe(200);
    let watchEnded = '';
    watch.on('data', (d: Buffer) => {
      if (d.toString().includes('"type":"ERROR"')) watchEnded = `error event: ${d.toString().slice(0, 200)}`;
    });
    watch.on('end', () => (watchEnded ||= 'ended'));
    watch.on('error', (err) => (watchEnded ||= `error: ${String(err)}`));

    const t0 = Date.now();
    const request_ = `rotation-${Date.now()}`;
    await kubectlOk(
      ['-n', INSTALLED_NAMESPACE, 'annotate', 'secret', CA_SECRET, `${ROTATE_CA_ANNOTATION}=${request_}`, '--overwrite'],
      kube,
    );
    const steps: Record<string, number> = {};
    await eventually(
      async () => {
        const s = await secret(CA_SECRET);
        const phase = s.metadata.annotations?.['sandbox-scale.io/ca-rotation'];
        if (phase !== undefined) steps[phase] ??= Date.now() - t0;
        if (phase === 'trusting-new') newCa ??= text(s, 'next.crt');
        if (s.metadata.annotations?.['sandbox-scale.io/rotated-ca'] !== request_ || phase !== undefined)
          throw new Error(`rotation at ${phase}`);
        newCa = text(s, 'tls.crt');
      },
      { timeoutMs: 300_000, intervalMs: 500 },
    );
    steps.done = Date.now() - t0;
    // at least a minute of clients, and then fast-path calls on the new certificate alone (25: about
    // five seconds of them)
    const newLeafAtDone = counts.newLeaf;
    await eventually(
      () => {
        if (Date.now() - t0 < 60_000) throw new Error('less than a minute of clients yet');
        if (counts.newLeaf - newLeafAtDone < 25) throw new Error(`${counts.newLeaf - newLeafAtDone} calls on the new certificate alone`);
      },
      { timeoutMs: 120_000, intervalMs: 500 },
    );
    stopped = true;
    await Promise.all([refresh, lists, fastPath]);
    watch.destroy();

    process.stdout.write(
      `[ca-rotation] overlap ${CA_ROTATION_OVERLAP}; steps at ${JSON.stringify(steps)} ms; ${counts.lists} lists and ` +
        `${counts.fastPath} fast-path calls over ${Math.round((Date.now() - t0) / 1000)} s, ${failures.length} failed; fast-path ` +
        `connections on the old certificate ${counts.oldLeaf}, on the new ${counts.newLeaf}; watch ${watchEnded || 'open throughout'}\n`,
    );
    if (failures.length > 0) process.stdout.write(`[ca-rotation] failures: ${failures.slice(0, 20).join('\n')}\n`);
    // new connections: every listener now serves a certificate of the new CA, and of it alone
    const after = newCa as string;
    expect(after).not.toBe(oldCa);
    const listeners = [sys.fastPathUrl, routerUrl, ...sys.apiserverUrls];
    for (const u of listeners) {
      const leaf = await presented(u, after, sys.servernameOf(u)).catch(async (err: unknown) => {
        const pods = await kubectlOk(['-n', INSTALLED_NAMESPACE, 'get', 'pods,endpointslices', '-o', 'wide'], kube);
        throw new Error(`${u}: ${String(err)}\n${pods.stdout}`);
      });
      expect(leaf.verify(new X509Certificate(after).publicKey)).toBe(true);
    }
    const apiService = await kubectlJson<{ spec: { caBundle: string } }>(['get', 'apiservice', 'v1beta1.agents.x-k8s.io'], kube);
    expect(Buffer.from(apiService.spec.caBundle, 'base64').toString('utf8').trim()).toBe(after.trim());
    process.stdout.write(`[ca-rotation] ${listeners.length} listeners serve a certificate of the new CA to new connections\n`);
    expect(failures).toEqual([]);
    expect(watchEnded).toBe('');
    expect(counts.lists).toBeGreaterThan(100);
    expect(counts.oldLeaf).toBeGreaterThan(0);
    expect(counts.newLeaf).toBeGreaterThan(0);
    expect(await restarts()).toEqual(podsBefore);
  }, 420_000);
});
