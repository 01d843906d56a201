import { eventually, kubectl, runSuffix, type RunResult, kubectlOk } from '../src/index';
import { NodeInventorySchema, parseObject } from '@sandbox-scale/scale-core';
import { applyWarmPool, itWhere, startSuiteSystem, waitPoolReady } from '../src/system/suite-system';
import { e2eTarget, type SystemUnderTest } from '../src/system/system-under-test';
import { sandboxdCall, sandboxdRow, type SandboxdNode, type SandboxdRow } from '../src/testing/sandboxd';
import type { Claim, Cond } from '../src/testing/claim-types';
import { sandboxManifest } from '../src/testing/sandbox-manifests';

// Claims live as long as asked, on nodes whose default lease is short (2 s): claim-controller,
// under its chart ServiceAccount, renews the node lease of a claim without shutdownTime for as
// long as the claim exists, releases a bounded claim at its shutdownTime, deletes it after
// ttlSecondsAfterFinished, and says SandboxLost when the node no longer has the sandbox.

const ns = `t-lease-${runSuffix()}`;
const GROUP = 'extensions.agents.x-k8s.io/v1beta1';
const IMAGE = 'ghcr.io/example/lease-agent:1.0';
const LEASE_S = 2;
const API_LEASE_S = 4;
let sys: SystemUnderTest;

function k(args: string[], input?: string): Promise<RunResult> {
  return kubectlOk(args, { kubeconfig: sys.kubeconfigPath, input });
}

async function getClaim(name: string): Promise<Claim | undefined> {
  const r = await kubectl(['get', 'sandboxclaim', name, '-n', ns, '-o', 'json'], { kubeconfig: sys.kubeconfigPath });
  if (r.code !== 0) {
    if (r.stderr.includes('NotFound')) return undefined;
    throw new Error(r.stderr);
  }
  return JSON.parse(r.stdout) as Claim;
}

function cond(c: Claim | undefined, type: string): Cond | undefined {
  return c?.status?.conditions?.find((x) => x.type === type);
}

async function createClaim(name: string, lifecycle?: Record<string, unknown>): Promise<void> {
  await k(
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: GROUP,
      kind: 'SandboxClaim',
      metadata: { name, namespace: ns },
      spec: { warmPoolRef: { name: 'agent' }, ...(lifecycle ? { lifecycle } : {}) },
    }),
  );
}

async function waitBound(name: string): Promise<Claim> {
  return eventually(
    async () => {
      const c = await getClaim(name);
      if (cond(c, 'Bound')?.status !== 'True') throw new Error(`${name} not Bound: ${JSON.stringify(c?.status?.conditions)}`);
      return c as Claim;
    },
    { timeoutMs: 60_000, intervalMs: 200 },
  );
}

function nodeOf(c: Claim): SandboxdNode {
  const node = sys.nodes.find((n) => n.name === c.status?.sandbox?.nodeName);
  if (!node) throw new Error(`claim ${c.metadata.name} is on no known node: ${JSON.stringify(c.status?.sandbox)}`);
  return node;
}

/** The node's own row of a sandbox, or undefined once the node no longer has it. */
const nodeRow = (node: SandboxdNode, id: string): Promise<SandboxdRow | undefined> => sandboxdRow(node, id);

beforeAll(async () => {
  sys = await startSuiteSystem({
    namespaces: [ns],
    local: {
      nodes: 2,
      speed: 0,
      publishInterval: '1s',
      extraArgs: {
        'sandboxd-sim': ['--default-ttl-seconds', String(LEASE_S)],
        'claim-controller': ['--sandbox-lease-ttl', '0s'],
        // a Sandbox created through the API lives until deleted on 4 s node leases it renews itself
        'sandbox-apiserver': ['--sandbox-lease-ttl', `${API_LEASE_S}s`],
      },
    },
  });
  await applyWarmPool(sys, ns, { image: IMAGE, replicas: 6 });
  await waitPoolReady(sys, ns, 6, { atLeast: true });
}, 240_000);

afterAll(async () => {
  await sys?.stop();
}, 120_000);

// Ten node leases in a minute need 2 s leases: the sim's default lease and the apps' lease TTLs are
// set when they start. The installed chart runs the chart's own (15 m), shared by every suite.
const itShortLeases = itWhere(
  e2eTarget() !== 'installed',
  'needs 2 s node leases (sandboxd --default-ttl-seconds, --sandbox-lease-ttl of the apps) set at start; the installed chart keeps its 15 m default for every suite, renewed every 7.5 min',
);

describe('node leases of claims', () => {
  itShortLeases(
    'keeps a claim without shutdownTime Bound over ten lease periods, its node lease renewed ahead of each deadline',
    async () => {
      // and a Sandbox created through the aggregated API without a TTL, on its own 4 s leases
      const created = JSON.parse(
        (await k(['create', '-o', 'json', '-f', '-'], JSON.stringify(sandboxManifest('api-forever', IMAGE, ns)))).stdout,
      ) as { metadata: { annotations?: Record<string, string> }; status?: { nodeName?: string } };
      const apiId = created.metadata.annotations?.['sandbox.cocoonstack.io/claim-id'] ?? '';
      const apiNode = sys.nodes.find((n) => n.name === created.status?.nodeName);
      expect(apiId).not.toBe('');
      expect(apiNode).toBeDefined();
      const apiCreatedAt = Date.now();
      await createClaim('forever');
      const c = await waitBound('forever');
      const id = c.status?.sandbox?.claimID ?? '';
      const node = nodeOf(c);
      const boundAt = Date.now();
      const deadlines = new Set<string>();
      // watch the claim and the node's row until ten node leases have passed since the bind
      const periods = await eventually(
        async () => {
          const row = await nodeRow(node, id);
          if (!row) throw new Error('gone');
          if (row.deadline) deadlines.add(row.deadline);
          const now = await getClaim('forever');
          if (cond(now, 'Bound')?.status !== 'True') throw new Error('unbound');
          const elapsed = (Date.now() - boundAt) / 1000 / LEASE_S;
          if (elapsed < 10) throw new Error(`only ${elapsed.toFixed(1)} lease periods so far`);
          return elapsed;
        },
        { timeoutMs: 60_000, intervalMs: 250, retryOn: (err) => !['gone', 'unbound'].includes((err as Error).message) },
      );
      const last = await nodeRow(node, id);
      const renewals = deadlines.size - 1;
      console.log(
        JSON.stringify({
          test: 'lease-unbounded',
          lease_s: LEASE_S,
          lease_periods: Number(periods.toFixed(1)),
          distinct_deadlines: deadlines.size,
          still_on_node: last !== undefined,
        }),
      );
      expect(periods).toBeGreaterThanOrEqual(10);
      expect(last).toBeDefined();
      // renewed at 40-60 % of each 2 s lease: at least one new deadline per lease period
      expect(renewals).toBeGreaterThanOrEqual(9);
      expect(cond(await getClaim('forever'), 'Ready')?.status).not.toBe('False');
      const apiRow = await nodeRow(apiNode as SandboxdNode, apiId);
      const apiPeriods = (Date.now() - apiCreatedAt) / 1000 / API_LEASE_S;
      console.log(
        JSON.stringify({
          test: 'lease-aggregated-api',
          lease_s: API_LEASE_S,
          lease_periods: Number(apiPeriods.toFixed(1)),
          still_on_node: apiRow !== undefined,
        }),
      );
      expect(apiPeriods).toBeGreaterThanOrEqual(5);
      expect(apiRow).toBeDefined();
      expect((await k(['get', 'sandbox', 'api-forever', '-n', ns, '-o', 'name'])).stdout.trim()).toBe(
        'sandbox.agents.x-k8s.io/api-forever',
      );
      await k(['delete', 'sandbox', 'api-forever', '-n', ns]);
    },
    120_000,
  );

  it('releases a bounded claim at its shutdownTime and deletes it ttlSecondsAfterFinished later', async () => {
    const shutdown = new Date(Math.ceil((Date.now() + 8_000) / 1000) * 1000);
    await createClaim('bounded', { shutdownTime: shutdown.toISOString().replace(/\.\d{3}Z$/, 'Z'), ttlSecondsAfterFinished: 3 });
    const c = await waitBound('bounded');
    const id = c.status?.sandbox?.claimID ?? '';
    const node = nodeOf(c);
    // the node keeps the sandbox past several of its default 2 s leases, up to shutdownTime
    const goneAt = await eventually(
      async () => {
        if (await nodeRow(node, id)) throw new Error('still on the node');
        return Date.now();
      },
      { timeoutMs: 30_000, intervalMs: 50 },
    );
    const expired = await eventually(
      async () => {
        const now = await getClaim('bounded');
        if (cond(now, 'Bound')?.reason !== 'ClaimExpired') throw new Error(`not expired yet: ${JSON.stringify(now?.status?.conditions)}`);
        return now as Claim;
      },
      { timeoutMs: 10_000, intervalMs: 100 },
    );
    const lateMs = goneAt - shutdown.getTime();
    console.log(JSON.stringify({ test: 'lease-bounded', shutdown: shutdown.toISOString(), released_after_shutdown_ms: lateMs }));
    expect(lateMs).toBeGreaterThanOrEqual(-50);
    expect(lateMs).toBeLessThanOrEqual(1000);
    expect(cond(expired, 'Ready')).toMatchObject({ status: 'False', reason: 'ClaimExpired' });
    expect(cond(expired, 'Finished')).toMatchObject({ status: 'True', reason: 'ClaimExpired' });
    await eventually(
      async () => {
        if (await getClaim('bounded')) throw new Error('claim still there after ttlSecondsAfterFinished');
      },
      { timeoutMs: 20_000, intervalMs: 250 },
    );
  }, 120_000);

  // claim-controller notices a vanished sandbox at the first inventory of its node that no longer
  // lists it (it then asks the node), not only at its next lease renewal: so this runs with the
  // installed chart's 15 m leases too
  it('says SandboxLost when the node no longer has the sandbox, and releases nothing else', async () => {
    await createClaim('bystander');
    const bystander = await waitBound('bystander');
    await createClaim('lost');
    const c = await waitBound('lost');
    const node = nodeOf(c);
    const id = c.status?.sandbox?.claimID ?? '';
    // published first, so the release below is a change of the node's inventory
    await eventually(
      async () => {
        const listed = JSON.parse((await k(['get', 'nodeinventories', '-o', 'json'])).stdout) as { items: unknown[] };
        const inventories = listed.items.map((o) => parseObject(NodeInventorySchema, o));
        if (!inventories.some((inv) => (inv.entries ?? []).some((e) => e.id === id))) throw new Error(`sandbox ${id} not published yet`);
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    // the sandbox disappears behind the controller's back (an operator's release on the node)
    const res = await sandboxdCall(node, `/v1/sandboxes/${encodeURIComponent(id)}/release`, { method: 'POST' });
    expect(res.status).toBe(204);
    const lost = await eventually(
      async () => {
        const now = await getClaim('lost');
        if (cond(now, 'Bound')?.reason !== 'SandboxLost') throw new Error(`not lost yet: ${JSON.stringify(now?.status?.conditions)}`);
        return now as Claim;
      },
      { timeoutMs: 20_000, intervalMs: 200 },
    );
    expect(cond(lost, 'Bound')?.message).toContain(id);
    expect(cond(lost, 'Finished')?.status).toBe('True');
    const events = (await k(['get', 'events', '-n', ns, '--field-selector', 'involvedObject.name=lost', '-o', 'json'])).stdout;
    expect(events).toContain('SandboxLost');
    // another claim on the nodes is untouched
    expect(cond(await getClaim('bystander'), 'Bound')?.status).toBe('True');
    expect(await nodeRow(nodeOf(bystander), bystander.status?.sandbox?.claimID ?? '')).toBeDefined();
    await k(['delete', 'sandboxclaim', 'lost', '-n', ns, '--wait=true', '--timeout=30s']);
  }, 60_000);
});
