import { randomUUID } from 'node:crypto';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { eventually, runSuffix } from '../src/index';
import { applyWarmPool, startSuiteSystem, waitPoolReady } from '../src/system/suite-system';
import type { SystemUnderTest } from '../src/system/system-under-test';
import { sandboxdCall, sandboxdRow, type SandboxdNode } from '../src/testing/sandboxd';

// A node, or a tenant holding a node token, writes any claim_ref it likes. One that names
// another namespace must not steer the control plane there: claim-controller's orphan pass
// creates no SandboxClaim or token Secret for a forged `fastclaim:` reference, and
// sandbox-apiserver never renews a forged `+renew` one. Both are served, counted and left alone.

const attacker = `t-refs-a-${runSuffix()}`;
const victim = `t-refs-v-${runSuffix()}`;
const IMAGE = 'ghcr.io/example/refs-agent:1.0';
const GROUP = 'extensions.agents.x-k8s.io';
let sys: SystemUnderTest;

beforeAll(async () => {
  sys = await startSuiteSystem({
    namespaces: [attacker, victim],
    local: { nodes: 1, speed: 0, metrics: true, publishInterval: '1s', extraArgs: { 'claim-controller': ['--orphan-interval', '1s'] } },
  });
  await applyWarmPool(sys, attacker, { image: IMAGE, replicas: 3 });
  await waitPoolReady(sys, attacker, 3, { atLeast: true });
}, 240_000);

afterAll(async () => {
  await sys?.stop();
}, 120_000);

/** Claims a VM on `node` directly, under the claim_ref the caller chose. */
async function claimDirect(node: SandboxdNode, claimRef: string, ttlSeconds: number): Promise<{ id: string; deadline: string }> {
  const res = await sandboxdCall(node, '/v1/claim', {
    method: 'POST',
    body: { template: IMAGE, ttl_seconds: ttlSeconds, claim_ref: claimRef },
  });
  if (res.status !== 200) throw new Error(`claim: ${res.status} ${await res.text()}`);
  return (await res.json()) as { id: string; deadline: string };
}

/** The summed value of `name{labels}` over every claim-controller replica's /metrics page. */
async function claimControllerCounter(name: string, labels: Record<string, string>): Promise<number> {
  const apps = [...(await sys.metricsEndpoints()).keys()].filter((app) => /claim-controller/.test(app));
  if (apps.length === 0) throw new Error('claim-controller has not said where it serves metrics');
  let total = 0;
  for (const app of apps) {
    const page = await sys.scrapeMetrics(app);
    if (page.status !== 200) throw new Error(`${app} /metrics: ${page.status} ${page.text}`);
    const text = page.text;
    for (const line of text.split('\n')) {
      if (!line.startsWith(`${name}{`)) continue;
      const inside = line.slice(line.indexOf('{') + 1, line.lastIndexOf('}'));
      if (Object.entries(labels).every(([k, v]) => inside.includes(`${k}="${v}"`))) total += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  return total;
}

describe('claim references a node wrote', () => {
  it('a forged fastclaim reference naming another namespace makes no SandboxClaim or Secret there', async () => {
    const node = sys.nodes[0] as SandboxdNode;
    const before = await claimControllerCounter('sandbox_scale_claim_controller_orphan_items_total', { outcome: 'unproven' });
    const forged = await claimDirect(node, `fastclaim:${randomUUID()}:${victim}/forged-1`, 600);
    // the orphan pass has seen it (counted unproven) more than once
    await eventually(
      async () => {
        const n = await claimControllerCounter('sandbox_scale_claim_controller_orphan_items_total', { outcome: 'unproven' });
        if (n < before + 2) throw new Error(`orphan pass counted ${n - before} unproven deliveries so far`);
      },
      { timeoutMs: 90_000, intervalMs: 500 },
    );
    const custom = sys.kubeConfig.makeApiClient(CustomObjectsApi);
    const claims = (await custom.listNamespacedCustomObject({
      group: GROUP,
      version: 'v1beta1',
      namespace: victim,
      plural: 'sandboxclaims',
    })) as {
      items: unknown[];
    };
    expect(claims.items).toEqual([]);
    const secrets = await sys.kubeConfig.makeApiClient(CoreV1Api).listNamespacedSecret({ namespace: victim });
    expect(secrets.items.filter((s) => s.type !== 'kubernetes.io/service-account-token').map((s) => s.metadata?.name)).toEqual([]);
    // the VM is left alone on its node, unreleased
    expect((await sandboxdRow(node, forged.id))?.id).toBe(forged.id);
  }, 120_000);

  it('a forged +renew reference is never renewed: its node lease stays where the node set it', async () => {
    const node = sys.nodes[0] as SandboxdNode;
    const forged = await claimDirect(node, `sandbox+renew:${randomUUID()}:${victim}/forged-2`, 120);
    const deadline = (await sandboxdRow(node, forged.id))?.deadline;
    expect(deadline).toBeDefined();
    // sandbox-apiserver's renewer has passed over it: a lease this short of the renewal point would be renewed at once
    await eventually(
      async () => {
        const log = [...(await sys.appLogs())]
          .filter(([app]) => /sandbox-apiserver/.test(app))
          .map(([, text]) => text)
          .join('\n');
        if (!log.split('\n').some((l) => l.includes(forged.id) && l.includes('not renewing')))
          throw new Error('the renewer has not passed over the forged sandbox yet');
      },
      { timeoutMs: 90_000, intervalMs: 500 },
    );
    expect((await sandboxdRow(node, forged.id))?.deadline).toBe(deadline);
  }, 120_000);
});
