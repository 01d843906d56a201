import type { KubernetesObject } from '@kubernetes/client-node';
import { request as httpsRequest } from 'node:https';
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KEPT_BY_LABEL } from '@sandbox-scale/kube-runtime';
import { REPO_ROOT } from '../src/images/images';
import { kubectl } from '../src/index';
import { installedPods, waitInstalled, INSTALLED_NAMESPACE, INSTALLED_RELEASE } from '../src/installed/installed-system';
import { NODE_NAMESPACE } from '../src/installed/installed-values';
import { connectInstalled, readInstalledState } from '../src/installed/installed-target';
import type { SystemUnderTest } from '../src/system/system-under-test';
import { toolPath } from '../src/control-plane/tools';
import { HELM_TEMPLATE_KUBE_VERSION } from '../src/control-plane/kube-version';
import { runCommand } from '../src/system/run-command';
import { eventually } from '../src/testing/eventually';
import { claimSecretToken } from '../src/testing/claim-secret';
import { sandboxdIds } from '../src/testing/sandboxd';
import { warmPoolList } from '../src/testing/sandbox-manifests';

// The chart as installed (by the installed run's global setup, shared with the e2e suites): every
// app runs as the chart's pods on a real node (images built here, in-cluster ServiceAccount
// credentials, probes, read-only root filesystems), the APIService is served through its Service,
// and sandboxd-sim runs as a DaemonSet on the node's address.

const state = readInstalledState();
const system = {
  fleetToken: state.fleetToken,
  sandboxdUrl: state.sandboxdUrl,
  sandboxdToken: state.sandboxdToken,
  kubectl: (args: string[], input?: string): Promise<string> =>
    runCommand(toolPath(state.binDir, 'kubectl'), args, { KUBECONFIG: state.kubeconfigPath }, input),
};
/** A sandbox token the suite saw; no log line of any pod may carry it. */
let sandboxToken = '';
const ns = 'installed-e2e';
const IMAGE = 'ghcr.io/example/installed-agent:1.0';

interface Listed<T> {
  items: T[];
}
type Cond = { type: string; status: string; reason?: string };
type Claim = KubernetesObject & {
  status?: { conditions?: Cond[]; sandbox?: { name?: string; claimID?: string; tokenSecretName?: string } };
};
type Pool = KubernetesObject & { status?: { readyReplicas?: number } };
type Pod = KubernetesObject & {
  metadata: { name: string };
  status?: { conditions?: Cond[]; containerStatuses?: { restartCount: number; imageID?: string }[] };
};
type Inventory = KubernetesObject & { pools?: { template: string; warm: number; target: number }[] };
type Lease = KubernetesObject & { spec?: { holderIdentity?: string } };

const isTrue = (conds: Cond[] | undefined, type: string): boolean => conds?.some((c) => c.type === type && c.status === 'True') ?? false;

async function kJson<T>(args: string[]): Promise<T> {
  return JSON.parse(await system.kubectl([...args, '-o', 'json'])) as T;
}

const manifests = (replicas: number, claims: string[]): string => warmPoolList(ns, { image: IMAGE, replicas, claims });

/** Waits until the sandbox's Ready condition has this status and reason. */
async function sandboxReady(name: string, ready: { status: string; reason: string }): Promise<void> {
  await eventually(
    async () => {
      const s = await kJson<KubernetesObject & { status?: { conditions?: Cond[] } }>(['-n', ns, 'get', 'sandbox', name]);
      expect(s.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject(ready);
    },
    { timeoutMs: 60_000, intervalMs: 1000 },
  );
}

/** Every pod of the control plane's namespace and of the node side's. */
const allPods = (): Promise<Pod[]> => installedPods<Pod>((args) => system.kubectl(args));

const apiserverPods = (): Promise<Listed<Pod>> =>
  kJson<Listed<Pod>>(['-n', INSTALLED_NAMESPACE, 'get', 'pods', '-l', 'app.kubernetes.io/component=sandbox-apiserver']);

const nodeSandboxIds = (): Promise<string[]> => sandboxdIds([{ name: 'node', url: system.sandboxdUrl, token: system.sandboxdToken }]);

async function bound(names: string[]): Promise<Claim[]> {
  return eventually(
    async () => {
      const list = await kJson<Listed<Claim>>(['-n', ns, 'get', 'sandboxclaims']);
      const claims = list.items.filter((c) => names.includes(c.metadata?.name as string));
      expect(claims).toHaveLength(names.length);
      for (const c of claims) expect(isTrue(c.status?.conditions, 'Bound')).toBe(true);
      return claims;
    },
    { timeoutMs: 120_000, intervalMs: 1000 },
  );
}

let sut: SystemUnderTest;

beforeAll(async () => {
  sut = await connectInstalled();
  await sut.createNamespace(ns);
}, 60_000);

afterAll(async () => {
  await sut?.stop();
});

describe('sandbox-scale installed by helm on a real node', () => {
  it('runs every app as the chart deploys it, under its ServiceAccount, with the APIService Available', async () => {
    const deployments = await kJson<
      Listed<
        KubernetesObject & {
          spec: { replicas: number; template: { spec: { serviceAccountName: string } } };
          status?: { readyReplicas?: number };
        }
      >
    >(['-n', INSTALLED_NAMESPACE, 'get', 'deployments']);
    const byName = Object.fromEntries(deployments.items.map((d) => [d.metadata?.name, d]));
    expect(byName['sandbox-scale-claim-controller']?.status?.readyReplicas).toBe(2);
    expect(byName['sandbox-scale-sandbox-apiserver']?.status?.readyReplicas).toBe(2);
    expect(byName['sandbox-scale-warmpool-driver']?.status?.readyReplicas).toBe(2);
    for (const d of deployments.items) expect(d.spec.template.spec.serviceAccountName).toBe(d.metadata?.name);
    // no app exited on its way to Ready (a crash on start shows as a restart)
    const pods = await allPods();
    expect(pods.map((p) => `${p.metadata.name} ${p.status?.containerStatuses?.[0]?.restartCount}`)).toEqual(
      pods.map((p) => `${p.metadata.name} 0`),
    );
    // the node DaemonSet lives in the node side's namespace, apart from the control plane
    const ds = await kJson<KubernetesObject & { status: { numberReady: number } }>([
      '-n',
      NODE_NAMESPACE,
      'get',
      'daemonset',
      'sandbox-scale-inventory-publisher',
    ]);
    expect(ds.status.numberReady).toBe(1);
    // discovery through the aggregated API: kube-apiserver reaches sandbox-apiserver through its Service
    expect(await system.kubectl(['api-resources', '--api-group=agents.x-k8s.io', '-o', 'name'])).toContain('sandboxes.agents.x-k8s.io');
  });

  it('runs every pod from the image the release pushed, pulled from its registry by the digest it printed', async () => {
    const printed = new Map(state.release.images.map((i) => [i.digest, i]));
    expect(printed.size).toBe(5);
    const pods = await allPods();
    const seen = new Set<string>();
    for (const p of pods)
      for (const c of p.status?.containerStatuses ?? []) {
        // imageID is what containerd resolved and pulled: <registry>/<repository>@<digest>
        const digest = /@(sha256:[a-f0-9]{64})$/.exec(c.imageID ?? '')?.[1] ?? '';
        const image = printed.get(digest);
        // the repository the release pushed it to (its reference without the tag), by that digest
        expect({ pod: p.metadata.name, imageID: c.imageID }).toEqual({
          pod: p.metadata.name,
          imageID: image === undefined ? 'a digest the release printed' : `${image.ref.replace(/:[^:/]+$/, '')}@${digest}`,
        });
        seen.add(image?.app ?? '');
      }
    expect([...seen].sort()).toEqual(['claim-controller', 'inventory-publisher', 'sandbox-apiserver', 'sandboxd-sim', 'warmpool-driver']);
    // the chart installed is the one the release pushed
    const installed = JSON.parse(
      await runCommand(toolPath(state.binDir, 'helm'), ['list', '-n', INSTALLED_NAMESPACE, '-o', 'json'], {
        KUBECONFIG: state.kubeconfigPath,
      }),
    ) as { name: string; chart: string }[];
    expect(installed.find((r) => r.name === INSTALLED_RELEASE)?.chart).toBe(`sandbox-scale-${state.release.chart.version}`);
  });

  it('runs the control plane under Pod Security "restricted", which refuses a pod that asks for more', async () => {
    const labels = async (name: string): Promise<Record<string, string>> =>
      (await kJson<KubernetesObject>(['get', 'namespace', name])).metadata?.labels ?? {};
    expect(await labels(INSTALLED_NAMESPACE)).toMatchObject({ 'pod-security.kubernetes.io/enforce': 'restricted' });
    expect(await labels(NODE_NAMESPACE)).toMatchObject({ 'pod-security.kubernetes.io/enforce': 'privileged' });
    // every app but the publisher runs there, admitted at that level
    const components = new Set(
      (await kJson<Listed<Pod>>(['-n', INSTALLED_NAMESPACE, 'get', 'pods'])).items.map(
        (p) => p.metadata.labels?.['app.kubernetes.io/component'] ?? '',
      ),
    );
    expect([...components].sort()).toEqual(['claim-controller', 'sandbox-apiserver', 'warmpool-driver']);
    // the level is enforced: the publisher's own pod, as the chart renders it, is refused there
    const publisher = await kJson<KubernetesObject & { spec: { template: { spec: { serviceAccountName?: string } } } }>([
      '-n',
      NODE_NAMESPACE,
      'get',
      'daemonset',
      'sandbox-scale-inventory-publisher',
    ]);
    // under the namespace's default ServiceAccount: the publisher's lives in the node namespace
    const spec = { ...publisher.spec.template.spec, serviceAccountName: 'default' };
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'restricted-probe' }, spec };
    const refused = await kubectl(['-n', INSTALLED_NAMESPACE, 'apply', '--dry-run=server', '-f', '-'], {
      kubeconfig: state.kubeconfigPath,
      input: JSON.stringify(pod),
    });
    expect(refused.code).not.toBe(0);
    // and for its hostPath mount of the node's token alone: its container asks for nothing else
    expect(refused.stderr.trim()).toMatch(
      /violates PodSecurity "restricted:latest": restricted volume types \(volume "node-token" uses restricted volume type "hostPath"\)$/,
    );
  });

  it('warms the pool, binds claims, lists them as sandboxes and releases a deleted claim', async () => {
    await system.kubectl(['apply', '-f', '-'], manifests(3, []));
    await eventually(
      async () => {
        const pool = await kJson<Pool>(['-n', ns, 'get', 'sandboxwarmpool', 'agent']);
        expect(pool.status?.readyReplicas).toBe(3);
      },
      { timeoutMs: 120_000, intervalMs: 1000 },
    );

    await system.kubectl(['apply', '-f', '-'], manifests(3, ['c1', 'c2']));
    const claims = await bound(['c1', 'c2']);
    const ids = claims.map((c) => c.status?.sandbox?.claimID as string);
    expect(await nodeSandboxIds()).toEqual(expect.arrayContaining(ids));

    await eventually(
      async () => {
        const out = await system.kubectl(['-n', ns, 'get', 'sandboxes']);
        for (const name of ['c1', 'c2']) expect(out).toMatch(new RegExp(`^${name}\\s+True`, 'm'));
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );

    // the sandbox token is in the claim Secret (written by claim-controller's in-cluster identity) and nowhere else
    const token = await claimSecretToken(kJson, ns, claims[0]?.status?.sandbox?.tokenSecretName as string);
    expect(token.length).toBeGreaterThan(8);
    sandboxToken = token;
    expect(await system.kubectl(['-n', ns, 'get', 'sandboxclaims', '-o', 'json'])).not.toContain(token);
    expect(await system.kubectl(['-n', ns, 'get', 'sandboxes', '-o', 'json'])).not.toContain(token);

    const released = claims.find((c) => c.metadata?.name === 'c2')?.status?.sandbox?.claimID as string;
    await system.kubectl(['-n', ns, 'delete', 'sandboxclaim', 'c2', '--wait=true', '--timeout=120s']);
    await eventually(async () => expect(await nodeSandboxIds()).not.toContain(released), { timeoutMs: 60_000, intervalMs: 1000 });
    await eventually(
      async () => {
        expect(await system.kubectl(['-n', ns, 'get', 'sandboxes', '-o', 'name'])).not.toContain('sandbox.agents.x-k8s.io/c2');
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    await eventually(
      async () => {
        const pool = await kJson<Pool>(['-n', ns, 'get', 'sandboxwarmpool', 'agent']);
        expect(pool.status?.readyReplicas).toBe(3);
      },
      { timeoutMs: 120_000, intervalMs: 1000 },
    );
  });

  it('moves the node target when the pool is scaled with kubectl scale', async () => {
    await system.kubectl(['-n', ns, 'scale', 'sandboxwarmpool/agent', '--replicas=5']);
    await eventually(
      async () => {
        const inv = await kJson<Listed<Inventory>>(['get', 'nodeinventories']);
        const pools = inv.items.flatMap((i) => i.pools ?? []).filter((p) => p.template === IMAGE);
        expect(pools.map((p) => p.target)).toEqual([5]);
        const pool = await kJson<Pool>(['-n', ns, 'get', 'sandboxwarmpool', 'agent']);
        expect(pool.status?.readyReplicas).toBe(5);
      },
      { timeoutMs: 120_000, intervalMs: 1000 },
    );
    await system.kubectl(['-n', ns, 'scale', 'sandboxwarmpool/agent', '--replicas=3']);
  });

  it("tells sandbox-apiserver of the node's changes from the node namespace, trusting the APIService's CA", async () => {
    // the claims above changed the node between publishes; each change was a notice, verified
    // against the CA the publisher read from the APIService's caBundle (it cannot mount the Secret)
    const [app] = [...(await sut.metricsEndpoints()).keys()].filter((a) => a.startsWith('inventory-publisher-'));
    if (app === undefined) throw new Error('no publisher pod to scrape');
    const page = await sut.scrapeMetrics(app);
    expect(page.status).toBe(200);
    // applied, or ignored as already published (the suite publishes every second): either way a
    // replica answered over TLS the publisher verified
    const answered = ['applied', 'ignored']
      .map(
        (r) => new RegExp(`^sandbox_scale_inventory_publisher_notices_total\\{[^}]*result="${r}"[^}]*\\} (\\d+)`, 'm').exec(page.text)?.[1],
      )
      .reduce((n, v) => n + Number(v ?? 0), 0);
    expect(answered).toBeGreaterThan(0);
  });

  it('explains sandboxes and prints them as a table through kube-apiserver', async () => {
    expect(await system.kubectl(['explain', 'sandboxes.spec'])).toContain('podTemplate');
    const wide = await system.kubectl(['-n', ns, 'get', 'sandboxes', '-o', 'wide']);
    expect(wide.split('\n')[0]).toMatch(/NAME\s+READY\s+REASON\s+NODE/);
  });

  it('refuses a request sent straight to the sandbox-apiserver Service without the front-proxy certificate', async () => {
    const svc = await kJson<KubernetesObject & { spec: { clusterIP: string } }>([
      '-n',
      INSTALLED_NAMESPACE,
      'get',
      'service',
      'sandbox-scale-sandbox-apiserver',
    ]);
    const url = `https://${svc.spec.clusterIP}/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes`;
    for (const headers of [{}, { 'X-Remote-User': 'admin', 'X-Remote-Group': 'system:masters' }]) {
      const status = await new Promise<number>((resolve, reject) => {
        const req = httpsRequest(url, { headers, rejectUnauthorized: false, timeout: 10_000 }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('timeout', () => req.destroy(new Error('timeout')));
        req.on('error', reject);
        req.end();
      });
      expect(status).toBe(401);
    }
  });

  it('claims through the fast path: the claim-controller Service, its chart-issued certificate, a token for its audience', async () => {
    await system.kubectl(['-n', ns, 'create', 'serviceaccount', 'fast-user']);
    await system.kubectl([
      '-n',
      ns,
      'create',
      'role',
      'claims-create',
      '--verb=create',
      '--resource=sandboxclaims.extensions.agents.x-k8s.io',
    ]);
    await system.kubectl(['-n', ns, 'create', 'rolebinding', 'fast-user', '--role=claims-create', `--serviceaccount=${ns}:fast-user`]);
    const token = (await system.kubectl(['-n', ns, 'create', 'token', 'fast-user', '--audience', 'sandbox-scale-fast-path'])).trim();
    const ca = await kJson<{ data: Record<string, string> }>(['-n', INSTALLED_NAMESPACE, 'get', 'secret', 'sandbox-scale-ca']);
    const svc = await kJson<KubernetesObject & { spec: { clusterIP: string } }>([
      '-n',
      INSTALLED_NAMESPACE,
      'get',
      'service',
      'sandbox-scale-claim-controller',
    ]);
    const body = JSON.stringify({ namespace: ns, name: 'fast1', warmPool: 'agent' });
    const answer = await new Promise<string>((resolve, reject) => {
      const req = httpsRequest(
        `https://${svc.spec.clusterIP}/v1/claims`,
        {
          method: 'POST',
          ca: Buffer.from(ca.data['tls.crt'] as string, 'base64'),
          servername: 'sandbox-scale-claim-controller.sandbox-system.svc',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          timeout: 30_000,
        },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve(`${res.statusCode} ${text}`));
        },
      );
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', reject);
      req.end(body);
    });
    expect(answer).toMatch(/^20[01] /);
    await bound(['fast1']);
  });

  it('binds claims after the claim-controller leader pod is killed', async () => {
    const lease = await kJson<Lease>(['-n', INSTALLED_NAMESPACE, 'get', 'lease', 'sandbox-scale-claim-controller']);
    const holder = lease.spec?.holderIdentity ?? '';
    // the pod named in the Lease, deleted with grace period 0
    const killed = await sut.killLeader('claimController');
    expect(holder.startsWith(`${killed}_`)).toBe(true);

    await system.kubectl(['apply', '-f', '-'], manifests(3, ['c1', 'c3']));
    await bound(['c1', 'c3']);
    const next = await eventually(
      async () => {
        const l = await kJson<Lease>(['-n', INSTALLED_NAMESPACE, 'get', 'lease', 'sandbox-scale-claim-controller']);
        expect(l.spec?.holderIdentity).toBeTruthy();
        expect(l.spec?.holderIdentity?.startsWith(`${killed}_`)).toBe(false);
        return l.spec?.holderIdentity;
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    expect(next).not.toBe(holder);
    // the Deployment replaces the killed pod and every pod is Ready again
    await waitInstalled((args) => system.kubectl(args), 180_000);
  });

  it('moves the node target after the leading warmpool-driver pod is deleted: the standby takes the Lease', async () => {
    const old = await sut.killLeader('warmpoolDriver');
    await system.kubectl(['-n', ns, 'scale', 'sandboxwarmpool/agent', '--replicas=4']);
    await eventually(
      async () => {
        const inv = await kJson<Listed<Inventory>>(['get', 'nodeinventories']);
        expect(
          inv.items
            .flatMap((i) => i.pools ?? [])
            .filter((p) => p.template === IMAGE)
            .map((p) => p.target),
        ).toEqual([4]);
        const lease = await kJson<Lease>(['-n', INSTALLED_NAMESPACE, 'get', 'lease', 'sandbox-scale-warmpool-driver']);
        expect(lease.spec?.holderIdentity?.startsWith(old)).toBe(false);
      },
      { timeoutMs: 120_000, intervalMs: 1000 },
    );
    await system.kubectl(['-n', ns, 'scale', 'sandboxwarmpool/agent', '--replicas=3']);
  });

  it('pauses and resumes a sandbox through the APIService and its Service', async () => {
    const base = `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes/c1`;
    await system.kubectl(['create', '--raw', `${base}/pause`, '-f', '-'], '{}');
    await sandboxReady('c1', { status: 'False', reason: 'Hibernated' });
    await system.kubectl(['create', '--raw', `${base}/resume`, '-f', '-'], '{}');
    await sandboxReady('c1', { status: 'True', reason: 'Running' });
  });

  it('keeps serving sandboxes while a sandbox-apiserver pod is deleted: the Service routes to the other', async () => {
    const pods = await apiserverPods();
    expect(pods.items).toHaveLength(2);
    const victim = pods.items[0]?.metadata.name as string;
    await system.kubectl(['-n', INSTALLED_NAMESPACE, 'delete', 'pod', victim, '--wait=false']);
    // reads through the aggregated API answer once the pod is gone, from the replica left and its replacement
    await eventually(
      async () => {
        const out = await system.kubectl(['-n', ns, 'get', 'sandboxes', '-o', 'name']);
        expect(out).toContain('sandbox.agents.x-k8s.io/c1');
        const now = await apiserverPods();
        expect(now.items.map((p) => p.metadata.name)).not.toContain(victim);
      },
      { timeoutMs: 120_000, intervalMs: 1000 },
    );
    await waitInstalled((args) => system.kubectl(args), 180_000);
    expect(await system.kubectl(['-n', ns, 'get', 'sandboxes', '-o', 'name'])).toContain('sandbox.agents.x-k8s.io/c3');
  });

  // the node's bridge CNI enforces no NetworkPolicy: this proves the cluster admits them, not their effect
  it('has its NetworkPolicies admitted by this cluster in a server-side dry run (the node does not enforce them)', async () => {
    const env = { KUBECONFIG: state.kubeconfigPath };
    const helm = toolPath(state.binDir, 'helm');
    const values = join(mkdtempSync(join(tmpdir(), 'netpol-')), 'values.json');
    writeFileSync(values, await runCommand(helm, ['get', 'values', INSTALLED_RELEASE, '-n', INSTALLED_NAMESPACE, '-o', 'json'], env));
    const chart = join(REPO_ROOT, 'charts/sandbox-scale');
    const only = ['--set', 'networkPolicy.enabled=true', '--show-only', 'templates/networkpolicy.yaml', ...HELM_TEMPLATE_KUBE_VERSION];
    const rendered = await runCommand(helm, ['template', INSTALLED_RELEASE, chart, '-n', INSTALLED_NAMESPACE, '-f', values, ...only], env);
    // each policy in its app's namespace (the publisher's in the node namespace)
    const applied = await system.kubectl(['apply', '--dry-run=server', '-f', '-'], rendered);
    for (const app of ['claim-controller', 'warmpool-driver', 'sandbox-apiserver', 'inventory-publisher'])
      expect(applied).toMatch(new RegExp(`networkpolicy\\.networking\\.k8s\\.io/\\S+-${app} created \\(server dry run\\)`));
  });

  it('keeps sandbox tokens and the fleet token out of every pod log', async () => {
    expect(sandboxToken).not.toBe('');
    const pods = await allPods();
    let lines = 0;
    for (const p of pods) {
      const text = await system.kubectl(['-n', p.metadata.namespace ?? INSTALLED_NAMESPACE, 'logs', p.metadata.name]);
      lines += text.split('\n').length;
      expect(text).not.toContain(sandboxToken);
      expect(text).not.toContain(system.fleetToken);
      expect(text).not.toContain(system.sandboxdToken);
    }
    expect(lines).toBeGreaterThan(pods.length);
  });

  it("keeps the certificates and the claim-reference key warmpool-driver's leader made, and a helm upgrade with the same values changes no Secret", async () => {
    type Secret = KubernetesObject & { metadata: { name: string; resourceVersion: string }; type?: string; data?: Record<string, string> };
    // every Secret but Helm's own record of each release revision: its version and a digest of its data
    const secrets = async (): Promise<Map<string, string>> =>
      new Map(
        (await kJson<Listed<Secret>>(['-n', INSTALLED_NAMESPACE, 'get', 'secrets'])).items
          .filter((s) => s.type !== 'helm.sh/release.v1')
          .map((s) => [
            s.metadata.name,
            `${s.metadata.resourceVersion} ${createHash('sha256')
              .update(JSON.stringify(s.data ?? {}))
              .digest('hex')}`,
          ]),
      );
    const kept = await kJson<Listed<Secret>>(['-n', INSTALLED_NAMESPACE, 'get', 'secrets', '-l', KEPT_BY_LABEL]);
    const fullname = INSTALLED_RELEASE;
    expect(kept.items.map((s) => s.metadata.name).sort()).toEqual(
      [
        `${fullname}-ca`,
        `${fullname}-claim-controller-serving`,
        `${fullname}-claim-ref-key`,
        `${fullname}-sandbox-apiserver-serving`,
      ].sort(),
    );
    const ca = kept.items.find((s) => s.metadata.name === `${fullname}-ca`)?.data?.['tls.crt'];
    const apiService = await kJson<{ spec: { caBundle?: string } }>(['get', 'apiservice', 'v1beta1.agents.x-k8s.io']);
    const decoded = (b64: string | undefined): string =>
      Buffer.from(b64 ?? '', 'base64')
        .toString('utf8')
        .trim();
    expect(decoded(apiService.spec.caBundle)).toBe(decoded(ca));

    const before = await secrets();
    await runCommand(
      toolPath(state.binDir, 'helm'),
      [
        'upgrade',
        INSTALLED_RELEASE,
        // the same release's chart, as a user upgrades in place
        state.release.chart.ref,
        '--version',
        state.release.chart.version,
        '--plain-http',
        '-n',
        INSTALLED_NAMESPACE,
        '--reuse-values',
        '--wait',
        '--timeout',
        '2m',
      ],
      { KUBECONFIG: state.kubeconfigPath },
    );
    await waitInstalled(system.kubectl);
    expect(await secrets()).toEqual(before);
    const after = await kJson<{ spec: { caBundle?: string } }>(['get', 'apiservice', 'v1beta1.agents.x-k8s.io']);
    expect(after.spec.caBundle).toBe(apiService.spec.caBundle);
  });
});
