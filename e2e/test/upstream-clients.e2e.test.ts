import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubernetesObject } from '@kubernetes/client-node';
import { eventually, runSuffix, type RunResult, kubectlOk, kubectlJson } from '../src/index';
import { runProcess } from '../src/system/run-command';
import { RELEASE, SYSTEM_NAMESPACE } from '../src/system/local-system';
import { applyWarmPool, itWhere, startSuiteSystem } from '../src/system/suite-system';
import { e2eTarget, type SystemUnderTest } from '../src/system/system-under-test';
import { sandboxdIds } from '../src/testing/sandboxd';
import { upstreamPythonVenv } from '../src/testing/upstream-python';

// What users of kubernetes-sigs/agent-sandbox meet when they point their tools at this project:
// `kubectl wait --for=condition=Ready sandboxclaim/x` as in the upstream quickstart, and the
// upstream Python client (k8s-agent-sandbox from PyPI, in a venv made here) running its claim
// flow unchanged. Locally the nodes publish every 20 s, so a Sandbox that is there the moment its
// claim is Ready comes from sandbox-apiserver following the claim, not from a lucky publish.

const ns = `upstream-${runSuffix()}`;
let system: SystemUnderTest;
let workDir: string;
let python: string;

type Condition = { type: string; status: string; reason?: string };
type Claim = KubernetesObject & {
  status?: {
    conditions?: Condition[];
    sandbox?: { name?: string; claimID?: string; nodeName?: string; address?: string; podIPs?: string[]; tokenSecretName?: string };
  };
};
type Sandbox = KubernetesObject & { status?: { nodeName?: string; podIPs?: string[]; conditions?: Condition[] } };

function k(args: string[], input?: string): Promise<RunResult> {
  return kubectlOk(args, { kubeconfig: system.kubeconfigPath, input });
}

function kJson<T>(args: string[]): Promise<T> {
  return kubectlJson<T>(args, { kubeconfig: system.kubeconfigPath });
}

const nodeSandboxIds = (): Promise<string[]> => sandboxdIds(system.nodes);

const claimManifest = (name: string) =>
  JSON.stringify({
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxClaim',
    metadata: { name, namespace: ns },
    spec: { warmPoolRef: { name: 'agent' } },
  });

beforeAll(async () => {
  workDir = mkdtempSync(join(tmpdir(), 'upstream-clients-'));
  // the venv is made while the system starts: both take a while
  const venvReady = upstreamPythonVenv(workDir);
  system = await startSuiteSystem({ namespaces: [ns], local: { nodes: 2, speed: 0.02, publishInterval: '20s' } });
  python = await venvReady;
  await applyWarmPool(system, ns, { image: 'ghcr.io/example/upstream-agent:1.0', replicas: 4 });
  await eventually(
    async () => {
      const p = await kJson<KubernetesObject & { status?: { readyReplicas?: number } }>(['-n', ns, 'get', 'sandboxwarmpool', 'agent']);
      expect(p.status?.readyReplicas).toBe(4);
    },
    { timeoutMs: 120_000, intervalMs: 1000 },
  );
}, 400_000);

afterAll(async () => {
  await system?.stop();
  if (workDir) rmSync(workDir, { recursive: true, force: true });
}, 60_000);

describe('upstream agent-sandbox clients, unchanged', () => {
  it('kubectl wait --for=condition=Ready sandboxclaim/x, then the Sandbox named in status.sandbox.name is there, Ready, with podIPs', async () => {
    await k(['apply', '-f', '-'], claimManifest('quick'));
    await k(['-n', ns, 'wait', '--for=condition=Ready', 'sandboxclaim/quick', '--timeout=90s']);
    // no wait here: the Sandbox must exist the moment the claim is Ready
    const claim = await kJson<Claim>(['-n', ns, 'get', 'sandboxclaim', 'quick']);
    const sandbox = await kJson<Sandbox>(['-n', ns, 'get', 'sandbox', claim.status?.sandbox?.name ?? '']);
    expect(claim.status?.sandbox?.name).toBe('quick');
    expect(claim.status?.sandbox?.claimID).toMatch(/^sb_/);
    const bound = claim.status?.conditions?.find((c) => c.type === 'Bound');
    expect(claim.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'True', reason: bound?.reason });
    expect(sandbox.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect(sandbox.status?.nodeName).toBe(claim.status?.sandbox?.nodeName);
    expect(sandbox.status?.podIPs).toEqual(claim.status?.sandbox?.podIPs);
    expect(sandbox.status?.podIPs?.length).toBe(1);
    // what replaces the upstream connection step (a port-forward to a Pod): the claim's address and token Secret
    expect(claim.status?.sandbox?.address?.startsWith(`${sandbox.status?.podIPs?.[0]}:`)).toBe(true);
    const secret = await kJson<{ data: Record<string, string> }>(['-n', ns, 'get', 'secret', claim.status?.sandbox?.tokenSecretName ?? '']);
    expect(Buffer.from(secret.data['token'] ?? '', 'base64').toString().length).toBeGreaterThan(8);

    const table = (await k(['-n', ns, 'get', 'sandboxclaims'])).stdout;
    expect(table.split('\n')[0]).toMatch(/^NAME\s+READY\s+REASON\s+SANDBOX\s+NODE\s+AGE$/);
    expect(table).toMatch(/^quick\s+True\s+NodeLocalClaim\s+quick\s+\S+/m);
  });

  it('runs the K8sHelper claim flow of the Python client from PyPI: create, wait claim Ready, wait Sandbox Ready, delete', async () => {
    const r = await runProcess(python, [join(__dirname, 'upstream', 'k8s_helper_flow.py'), ns, 'py-claim', 'agent'], {
      KUBECONFIG: system.kubeconfigPath,
    });
    if (r.code !== 0) throw new Error(`k8s_helper_flow.py exited ${r.code}: ${r.stderr}`);
    const out = JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as {
      sandboxName: string;
      foundAtOnce: boolean;
      podIP: string | null;
      sandboxReady: string[];
      claimStatus: Claim['status'];
      listedClaims: string[];
    };
    process.stdout.write(
      `python client: ${JSON.stringify({ sandboxName: out.sandboxName, foundAtOnce: out.foundAtOnce, podIP: out.podIP, listedClaims: out.listedClaims })}\n`,
    );
    expect(out.sandboxName).toBe('py-claim');
    expect(out.foundAtOnce).toBe(true);
    expect(out.sandboxReady).toEqual(['True']);
    expect(out.podIP).toBe(out.claimStatus?.sandbox?.podIPs?.[0]);
    expect(out.podIP).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    expect(out.listedClaims).toEqual(['py-claim']);
    // the connection step's replacement: the claim's address and its token Secret
    expect(out.claimStatus?.sandbox?.address).toMatch(new RegExp(`^${out.podIP?.replaceAll('.', '\\.')}:\\d+$`));
    expect(out.claimStatus?.sandbox?.tokenSecretName).toBe('py-claim-sandbox-token');

    await eventually(
      async () => {
        const claims = await kJson<{ items: Claim[] }>(['-n', ns, 'get', 'sandboxclaims']);
        expect(claims.items.map((c) => c.metadata?.name)).not.toContain('py-claim');
        const sandboxes = await kJson<{ items: Sandbox[] }>(['-n', ns, 'get', 'sandboxes']);
        expect(sandboxes.items.map((s) => s.metadata?.name)).not.toContain('py-claim');
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
  });

  // the installed chart is shared by every suite of the run: uninstalling it here would end the others
  itWhere(e2eTarget() === 'local', 'uninstalls the release, which the installed run shares between its suites')(
    'uninstalls in the documented order: claims first (their finalizer releases the VMs), then the release; the CRDs and pools stay',
    async () => {
      await k(['apply', '-f', '-'], claimManifest('last'));
      await k(['-n', ns, 'wait', '--for=condition=Ready', 'sandboxclaim/last', '--timeout=90s']);
      const id = (await kJson<Claim>(['-n', ns, 'get', 'sandboxclaim', 'last'])).status?.sandbox?.claimID ?? '';
      expect(await nodeSandboxIds()).toContain(id);
      await k(['delete', 'sandboxclaims', '--all', '-A', '--wait=true', '--timeout=60s']);
      expect((await kJson<{ items: Claim[] }>(['get', 'sandboxclaims', '-A'])).items).toEqual([]);
      expect(await nodeSandboxIds()).not.toContain(id);
      const r = await runProcess(
        join(system.binDir, 'helm'),
        ['uninstall', RELEASE, '-n', SYSTEM_NAMESPACE, '--wait', '--timeout', '60s'],
        { KUBECONFIG: system.kubeconfigPath },
      );
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const crds = await kJson<{ items: KubernetesObject[] }>(['get', 'crds']);
      expect(crds.items.map((c) => c.metadata?.name)).toEqual(
        expect.arrayContaining(['sandboxclaims.extensions.agents.x-k8s.io', 'sandboxwarmpools.extensions.agents.x-k8s.io']),
      );
      expect((await kJson<KubernetesObject>(['-n', ns, 'get', 'sandboxwarmpool', 'agent'])).metadata?.name).toBe('agent');
    },
  );
});
