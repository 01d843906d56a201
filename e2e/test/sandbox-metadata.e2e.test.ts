import { Agent, request } from 'node:https';
import { RbacAuthorizationV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { eventually, kubectl, runSuffix, type RunResult, kubectlOk } from '../src/index';
import { applyWarmPool, startSuiteSystem } from '../src/system/suite-system';
import type { SystemUnderTest } from '../src/system/system-under-test';
import { SYSTEM_NAMESPACE } from '../src/system/local-system';

// Labels and annotations users put on sandboxes, as kubectl puts them: label, annotate, patch
// (merge and JSON), selected with -l, seen as a MODIFIED watch event, and still there after the
// node publishes the sandbox anew, after a sandbox-apiserver restart, and on the other replica.
// spec.operatingMode (agent-sandbox's suspension) hibernates and wakes the microVM.

const ns = `meta-${runSuffix()}`;
let system: SystemUnderTest;
let agent: Agent;
let token = '';

type Sandbox = KubernetesObject & { status?: { conditions?: { type: string; status: string; reason?: string }[] } };

function k(args: string[], input?: string): Promise<RunResult> {
  return kubectlOk(args, { kubeconfig: system.kubeconfigPath, input });
}

const getSandbox = async (name: string): Promise<Sandbox> =>
  JSON.parse((await k(['-n', ns, 'get', 'sandbox', name, '-o', 'json'])).stdout) as Sandbox;

/** A GET straight to one sandbox-apiserver replica, as a namespace ServiceAccount. */
function getFrom(base: string, path: string): Promise<{ code: number; body: Sandbox }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${base}${path}`,
      {
        method: 'GET',
        agent,
        servername: system.servernameOf(base),
        headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ code: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Sandbox }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  system = await startSuiteSystem({ namespaces: [ns], local: { nodes: 2, speed: 0.02, publishInterval: '1s', apiserverReplicas: 2 } });
  agent = new Agent({ keepAlive: true, ca: system.servingCa });
  const rbac = system.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createNamespacedRole({
    namespace: ns,
    body: { metadata: { name: 'reader' }, rules: [{ apiGroups: ['agents.x-k8s.io'], resources: ['sandboxes'], verbs: ['get', 'list'] }] },
  });
  token = (await system.tenant(ns, 'reader')).token;
  await rbac.createNamespacedRoleBinding({
    namespace: ns,
    body: {
      metadata: { name: 'reader' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'reader' },
      subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: ns }],
    },
  });
  await applyWarmPool(system, ns, { image: 'ghcr.io/example/meta-agent:1.0', replicas: 3 });
  const claims = ['m1', 'm2'].map((name) => ({
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxClaim',
    metadata: { name, namespace: ns },
    spec: { warmPoolRef: { name: 'agent' } },
  }));
  await k(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: claims }));
  await k(['-n', ns, 'wait', '--for=condition=Ready', 'sandboxclaim/m1', 'sandboxclaim/m2', '--timeout=120s']);
  await eventually(
    async () => {
      for (const n of ['m1', 'm2']) expect((await getSandbox(n)).metadata?.name).toBe(n);
    },
    { timeoutMs: 30_000, intervalMs: 500 },
  );
}, 300_000);

afterAll(async () => {
  agent?.destroy();
  await system?.stop();
}, 60_000);

describe('labels and annotations users set on sandboxes', () => {
  it('kubectl label, annotate and patch (merge, JSON) change them; -l selects by them; a watch sees MODIFIED', async () => {
    const before = await getSandbox('m1');
    await k(['-n', ns, 'label', 'sandbox', 'm1', 'team=blue', 'tier=gold']);
    await k(['-n', ns, 'annotate', 'sandbox', 'm1', 'example.com/note=hello']);
    await k(['-n', ns, 'patch', 'sandbox', 'm1', '--type=merge', '-p', JSON.stringify({ metadata: { labels: { env: 'dev' } } })]);
    await k(['-n', ns, 'patch', 'sandbox', 'm1', '--type=json', '-p', JSON.stringify([{ op: 'remove', path: '/metadata/labels/tier' }])]);
    const after = await getSandbox('m1');
    expect(after.metadata?.labels).toMatchObject({ team: 'blue', env: 'dev' });
    expect(after.metadata?.labels).not.toHaveProperty('tier');
    expect(after.metadata?.labels?.['sandbox.cocoonstack.io/node']).toBe(before.metadata?.labels?.['sandbox.cocoonstack.io/node']);
    expect(after.metadata?.annotations?.['example.com/note']).toBe('hello');
    expect(after.metadata?.uid).toBe(before.metadata?.uid);

    expect((await k(['-n', ns, 'get', 'sandboxes', '-l', 'team=blue', '-o', 'name'])).stdout.trim().split('\n')).toEqual([
      'sandbox.agents.x-k8s.io/m1',
    ]);
    expect((await k(['-n', ns, 'get', 'sandboxes', '-l', 'team!=blue', '-o', 'name'])).stdout.trim().split('\n')).toEqual([
      'sandbox.agents.x-k8s.io/m2',
    ]);

    // the changes since the read before them, replayed from that resourceVersion
    const watch = await k([
      'get',
      '--raw',
      `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes?watch=1&fieldSelector=metadata.name%3Dm1&resourceVersion=${before.metadata?.resourceVersion}&timeoutSeconds=2`,
    ]);
    const events = watch.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; object: Sandbox });
    const modified = events.filter((e) => e.type === 'MODIFIED');
    expect(modified.length).toBeGreaterThanOrEqual(4);
    expect(modified.some((e) => e.object.metadata?.labels?.['team'] === 'blue')).toBe(true);
  });

  it('keeps the labels and annotations a create request gives', async () => {
    const body = {
      apiVersion: 'agents.x-k8s.io/v1beta1',
      kind: 'Sandbox',
      metadata: { name: 'made', namespace: ns, labels: { origin: 'create' }, annotations: { 'example.com/by': 'kubectl-create' } },
      spec: {
        podTemplate: {
          spec: {
            containers: [{ name: 'agent', image: 'ghcr.io/example/meta-agent:1.0', resources: { requests: { cpu: '1', memory: '1Gi' } } }],
          },
        },
      },
    };
    // a 503 (no warm VM yet, while the pool refills) is retried; any other failure is final
    await eventually(
      async () => {
        const r = await kubectl(['create', '-f', '-'], { kubeconfig: system.kubeconfigPath, input: JSON.stringify(body) });
        if (r.code !== 0 && /warm capacity/.test(r.stderr)) throw new Error(r.stderr);
        expect(r.stderr).toBe('');
      },
      { timeoutMs: 60_000, intervalMs: 1000 },
    );
    const s = await getSandbox('made');
    expect(s.metadata?.labels).toMatchObject({ origin: 'create' });
    expect(s.metadata?.annotations?.['example.com/by']).toBe('kubectl-create');
    // a list on a replica that did not create it shows it once its node publishes it
    await eventually(
      async () => {
        expect((await k(['-n', ns, 'get', 'sandboxes', '-l', 'origin=create', '-o', 'name'])).stdout.trim()).toBe(
          'sandbox.agents.x-k8s.io/made',
        );
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
  });

  it('refuses other fields with a 422 that names the field and says what may change', async () => {
    const r = await kubectl(
      [
        '-n',
        ns,
        'patch',
        'sandbox',
        'm1',
        '--type=merge',
        '-p',
        JSON.stringify({ spec: { replicas: 2 }, status: { nodeName: 'elsewhere' } }),
      ],
      { kubeconfig: system.kubeconfigPath },
    );
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('spec.replicas');
    expect(r.stderr).toContain('status.nodeName');
    expect(r.stderr).toContain('metadata.labels, metadata.annotations and spec.operatingMode');
    // a create-time field may be repeated as created (kubectl apply does), never changed
    const later = await kubectl(
      ['-n', ns, 'patch', 'sandbox', 'm1', '--type=merge', '-p', JSON.stringify({ spec: { shutdownTime: '2030-01-01T00:00:00Z' } })],
      { kubeconfig: system.kubeconfigPath },
    );
    expect(later.stderr).toContain('spec.shutdownTime: it is set when the Sandbox is created and cannot be changed');
    const reserved = await kubectl(['-n', ns, 'label', 'sandbox', 'm1', '--overwrite', 'sandbox.cocoonstack.io/node=elsewhere'], {
      kubeconfig: system.kubeconfigPath,
    });
    expect(reserved.code).not.toBe(0);
    expect(reserved.stderr).toContain('metadata.labels[sandbox.cocoonstack.io/node]');
  });

  it('keep them across a new publish of the sandbox (spec.operatingMode Suspended hibernates it, Running wakes it)', async () => {
    await k(['-n', ns, 'patch', 'sandbox', 'm1', '--type=merge', '-p', JSON.stringify({ spec: { operatingMode: 'Suspended' } })]);
    await eventually(
      async () => {
        const s = await getSandbox('m1');
        expect(s.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'Hibernated' });
        expect(s.metadata?.labels).toMatchObject({ team: 'blue', env: 'dev', 'sandbox.cocoonstack.io/phase': 'Hibernated' });
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    await k(['-n', ns, 'patch', 'sandbox', 'm1', '--type=merge', '-p', JSON.stringify({ spec: { operatingMode: 'Running' } })]);
    await eventually(
      async () => {
        const s = await getSandbox('m1');
        expect(s.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'True', reason: 'Running' });
        expect(s.metadata?.labels).toMatchObject({ team: 'blue', env: 'dev' });
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
  });

  it('serves them on every replica, and after a sandbox-apiserver restart', async () => {
    await eventually(
      async () => {
        for (const url of system.apiserverUrls) {
          const r = await getFrom(url, `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes/m1`);
          expect(r.code).toBe(200);
          expect(r.body.metadata?.labels).toMatchObject({ team: 'blue', env: 'dev' });
        }
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    await system.restartApiserverReplica();
    await eventually(
      async () => {
        const s = await getSandbox('m1');
        expect(s.metadata?.labels).toMatchObject({ team: 'blue', env: 'dev' });
        expect(s.metadata?.annotations?.['example.com/note']).toBe('hello');
        // served now from its node's inventory alone (the restart forgot the create), with its labels
        expect((await getSandbox('made')).metadata?.labels).toMatchObject({ origin: 'create' });
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    // one ConfigMap for the namespace, in sandbox-apiserver's own namespace (other suites sharing
    // the cluster keep theirs, each labelled with its own namespace)
    const cms = JSON.parse(
      (await k(['get', 'configmaps', '-A', '-l', `sandbox.cocoonstack.io/sandbox-metadata-of=${ns}`, '-o', 'json'])).stdout,
    ) as { items: KubernetesObject[] };
    expect(cms.items.map((c) => c.metadata?.name)).toEqual([`sandbox-metadata.${ns}`]);
    expect(cms.items.map((c) => c.metadata?.namespace)).toEqual([SYSTEM_NAMESPACE]);
  });
});
