import type { KubernetesObject } from '@kubernetes/client-node';
import { eventually, runSuffix, type RunResult, kubectlOk, kubectlJson } from '../src/index';
import { startSuiteSystem, waitPoolReady } from '../src/system/suite-system';
import type { SystemUnderTest } from '../src/system/system-under-test';
import { claimSecretToken } from '../src/testing/claim-secret';
import { sandboxdIds } from '../src/testing/sandboxd';
import { warmPoolList } from '../src/testing/sandbox-manifests';

// The whole system as a user meets it: the chart's CRDs, RBAC and APIService on a real
// kube-apiserver, the simulated node(s), the four apps under their own ServiceAccounts (local
// processes, or the chart's pods when installed), driven only through kubectl and the sandboxd HTTP API.

const ns = `e2e-${runSuffix()}`;
let system: SystemUnderTest;

function k(args: string[], input?: string): Promise<RunResult> {
  return kubectlOk(args, { kubeconfig: system.kubeconfigPath, input });
}

function kJson<T>(args: string[]): Promise<T> {
  return kubectlJson<T>(args, { kubeconfig: system.kubeconfigPath });
}

interface Listed<T> {
  items: T[];
}
type Claim = KubernetesObject & {
  status?: {
    conditions?: { type: string; status: string; reason?: string }[];
    sandbox?: { name?: string; claimID?: string; nodeName?: string; tokenSecretName?: string };
  };
};
type Pool = KubernetesObject & { status?: { readyReplicas?: number; conditions?: { type: string; status: string }[] } };
type Sandbox = KubernetesObject & { status?: { nodeName?: string; conditions?: { type: string; status: string; reason?: string }[] } };
type Inventory = KubernetesObject & {
  pools?: { template: string; warm: number; target: number }[];
  entries?: { name: string; id?: string; phase: string }[];
};

const IMAGE = 'ghcr.io/example/e2e-agent:1.0';

const manifests = (replicas: number, claims: string[]): string =>
  warmPoolList(ns, { image: IMAGE, replicas, claims, requests: { cpu: '1', memory: '1Gi' } });

function isTrue(conds: { type: string; status: string }[] | undefined, type: string): boolean {
  return conds?.some((c) => c.type === type && c.status === 'True') ?? false;
}

async function warmOnNodes(): Promise<number> {
  const inv = await kJson<Listed<Inventory>>(['get', 'nodeinventories']);
  return inv.items
    .flatMap((i) => i.pools ?? [])
    .filter((p) => p.template === IMAGE)
    .reduce((n, p) => n + p.warm, 0);
}

const nodeSandboxIds = (): Promise<string[]> => sandboxdIds(system.nodes);

beforeAll(async () => {
  system = await startSuiteSystem({ namespaces: [ns], local: { nodes: 3, speed: 0.02, publishInterval: '1s' } });
}, 180_000);

afterAll(async () => {
  await system?.stop();
}, 60_000);

describe('sandbox-scale on a real control plane', () => {
  it('warms the nodes for a SandboxWarmPool and reports it Ready', async () => {
    await k(['apply', '-f', '-'], manifests(6, []));
    await eventually(
      async () => {
        const pool = await kJson<Pool>(['-n', ns, 'get', 'sandboxwarmpool', 'agent']);
        expect(pool.status?.readyReplicas).toBe(6);
        expect(isTrue(pool.status?.conditions, 'Ready')).toBe(true);
        expect(await warmOnNodes()).toBe(6);
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
  });

  it('binds SandboxClaims to warm VMs, with the token only in the claim Secret, and lists them as sandboxes', async () => {
    await k(['apply', '-f', '-'], manifests(6, ['c1', 'c2', 'c3']));
    const claims = await eventually(
      async () => {
        const list = await kJson<Listed<Claim>>(['-n', ns, 'get', 'sandboxclaims']);
        expect(list.items).toHaveLength(3);
        for (const c of list.items) expect(isTrue(c.status?.conditions, 'Bound')).toBe(true);
        return list.items;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    const ids = claims.map((c) => c.status?.sandbox?.claimID);
    expect(new Set(ids).size).toBe(3);
    expect(await nodeSandboxIds()).toEqual(expect.arrayContaining(ids));

    const token = await claimSecretToken(kJson, ns, claims[0]?.status?.sandbox?.tokenSecretName as string);
    expect(token.length).toBeGreaterThan(8);
    expect((await k(['-n', ns, 'get', 'sandboxclaims', '-o', 'json'])).stdout).not.toContain(token);

    await eventually(
      async () => {
        const r = await k(['-n', ns, 'get', 'sandboxes']);
        for (const name of ['c1', 'c2', 'c3']) expect(r.stdout).toMatch(new RegExp(`^${name}\\s+True`, 'm'));
        expect(r.stdout).not.toContain(token);
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
  });

  it('pauses and resumes a sandbox through the aggregated API', async () => {
    const base = `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes/c1`;
    await k(['create', '--raw', `${base}/pause`, '-f', '-'], '{}');
    await eventually(
      async () => {
        const s = await kJson<Sandbox>(['-n', ns, 'get', 'sandbox', 'c1']);
        expect(s.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'Hibernated' });
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    await k(['create', '--raw', `${base}/resume`, '-f', '-'], '{}');
    await eventually(
      async () => {
        const s = await kJson<Sandbox>(['-n', ns, 'get', 'sandbox', 'c1']);
        expect(s.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'True', reason: 'Running' });
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
  });

  it('releases the VM when its claim is deleted, and the pool refills', async () => {
    const claim = await kJson<Claim>(['-n', ns, 'get', 'sandboxclaim', 'c2']);
    const id = claim.status?.sandbox?.claimID as string;
    await k(['-n', ns, 'delete', 'sandboxclaim', 'c2', '--wait=true', '--timeout=60s']);
    expect(await nodeSandboxIds()).not.toContain(id);
    await eventually(
      async () => {
        const r = await k(['-n', ns, 'get', 'sandboxes', '-o', 'name']);
        expect(r.stdout).not.toContain('sandbox.agents.x-k8s.io/c2');
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    await waitPoolReady(system, ns, 6, { timeoutMs: 60_000 });
  });

  it('moves the node targets when the pool is scaled with kubectl scale', async () => {
    await k(['-n', ns, 'scale', 'sandboxwarmpool/agent', '--replicas=12']);
    await eventually(
      async () => {
        const inv = await kJson<Listed<Inventory>>(['get', 'nodeinventories']);
        const pools = inv.items.flatMap((i) => i.pools ?? []).filter((p) => p.template === IMAGE);
        expect(pools.reduce((n, p) => n + p.target, 0)).toBe(12);
        // spread evenly over the nodes
        expect(pools.map((p) => p.target)).toEqual(system.nodes.map(() => 12 / system.nodes.length));
        const pool = await kJson<Pool>(['-n', ns, 'get', 'sandboxwarmpool', 'agent']);
        expect(pool.status?.readyReplicas).toBe(12);
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
  });

  it('explains sandboxes and prints them as a table through the real kube-apiserver', async () => {
    const explain = await k(['explain', 'sandboxes.spec']);
    expect(explain.stdout).toContain('podTemplate');
    const wide = await k(['-n', ns, 'get', 'sandboxes', '-o', 'wide']);
    expect(wide.stdout.split('\n')[0]).toMatch(/NAME\s+READY\s+REASON\s+NODE/);
  });
});
