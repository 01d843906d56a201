import { CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { grantEditRole } from '../src/testing/tenant-role';
import { Agent, request } from 'undici';
import { FAST_PATH_AUDIENCE } from '@sandbox-scale/scale-core';
import { eventually, kubectl, runSuffix, serviceAccountToken, type RunResult } from '../src/index';
import { CLAIM_CONTROLLER_ARGS, FAST_PATH_CAP } from '../src/installed/installed-values';
import { applyWarmPool, startSuiteSystem, waitPoolReady } from '../src/system/suite-system';
import type { SystemUnderTest } from '../src/system/system-under-test';
import { sandboxdCall, type SandboxdNode } from '../src/testing/sandboxd';

// Tenants stay apart, on the whole system as deployed (chart RBAC, every app under its own
// ServiceAccount, simulated node(s)): a user who may only create and delete sandboxclaims names
// claims after other users' sandboxes; and every fast-path delivery ends up as a SandboxClaim,
// including one whose first record write is refused by a ResourceQuota.

const GROUP = 'extensions.agents.x-k8s.io';
const IMAGE = 'ghcr.io/example/tenancy-agent:1.0';
const CAP = FAST_PATH_CAP;
const suffix = runSuffix();
const ns = `sec-${suffix}`;
const quotaNs = `secq-${suffix}`;
const capNs = `secc-${suffix}`;
const NO_POOL = 'no-such-pool';

let sys: SystemUnderTest;
let dispatcher: Agent;
const users: Record<'alice' | 'mallory' | 'carol', { kubeconfig: string; token: string; fastPathToken: string }> = {
  alice: { kubeconfig: '', token: '', fastPathToken: '' },
  mallory: { kubeconfig: '', token: '', fastPathToken: '' },
  carol: { kubeconfig: '', token: '', fastPathToken: '' },
};

interface Claim {
  metadata: { name: string; namespace: string; uid: string; annotations?: Record<string, string> };
  status?: { sandbox?: { name?: string; claimID?: string; tokenSecretName?: string }; conditions?: { type: string; status: string }[] };
}
interface Assignment {
  claimId: string;
  token: string;
  node: string;
}

/** Cross-tenant attempts: each one that did not reach the victim is refused. */
const attempts: { what: string; refused: boolean }[] = [];
/** Fast-path deliveries made by the test, and whether their first record write was refused. */
const deliveries: { namespace: string; name: string; claimId: string; token: string; firstRecordFailed: boolean }[] = [];
/** The victims' VMs: id, token, node. */
const victims: { what: string; id: string; token: string; node: SandboxdNode }[] = [];

async function k(args: string[], opts: { as?: keyof typeof users; input?: string } = {}): Promise<RunResult> {
  const r = await kubectl(args, { kubeconfig: opts.as ? users[opts.as].kubeconfig : sys.kubeconfigPath, input: opts.input });
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}${opts.as ? ` as ${opts.as}` : ''}: ${r.stderr}`);
  return r;
}

async function claimOf(namespace: string, name: string): Promise<Claim | undefined> {
  const r = await kubectl(['get', 'sandboxclaim', name, '-n', namespace, '-o', 'json'], { kubeconfig: sys.kubeconfigPath });
  return r.code === 0 ? (JSON.parse(r.stdout) as Claim) : undefined;
}

function claimBody(namespace: string, name: string, pool: string): string {
  return JSON.stringify({
    apiVersion: `${GROUP}/v1beta1`,
    kind: 'SandboxClaim',
    metadata: { name, namespace },
    spec: { warmPoolRef: { name: pool } },
  });
}

async function fastClaim(
  user: keyof typeof users,
  body: Record<string, unknown>,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await request(`${sys.fastPathUrl}/v1/claims`, {
    method: 'POST',
    dispatcher,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${users[user].fastPathToken}` },
    body: JSON.stringify(body),
  });
  return { status: r.statusCode, body: (await r.body.json()) as Record<string, unknown> };
}

async function nodeCall(
  n: SandboxdNode,
  path: string,
  init: { method?: string; body?: unknown } = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await sandboxdCall(n, path, init);
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

async function liveOnNode(id: string): Promise<boolean> {
  for (const n of sys.nodes) if ((await nodeCall(n, `/v1/sandboxes/${encodeURIComponent(id)}`)).status === 200) return true;
  return false;
}

/** Every token held in a Secret of `namespace` (admin read). */
async function secretTokens(namespace: string): Promise<Map<string, string>> {
  const list = await sys.kubeConfig.makeApiClient(CoreV1Api).listNamespacedSecret({ namespace });
  const out = new Map<string, string>();
  for (const s of list.items) if (s.data?.token) out.set(Buffer.from(s.data.token, 'base64').toString('utf8'), s.metadata?.name ?? '');
  return out;
}

async function userKubeconfig(namespace: string, name: keyof typeof users): Promise<void> {
  const user = await sys.tenant(namespace, name);
  // the fast path accepts only tokens minted for its own audience
  users[name] = {
    kubeconfig: user.path,
    token: user.token,
    fastPathToken: await serviceAccountToken(sys.kubeConfig, namespace, name, [FAST_PATH_AUDIENCE]),
  };
}

beforeAll(async () => {
  sys = await startSuiteSystem({
    namespaces: [ns, quotaNs, capNs],
    local: {
      nodes: 2,
      speed: 0,
      publishInterval: '1s',
      // a short orphan pass; records give up quickly so a refused one is left to that pass
      extraArgs: { 'claim-controller': [...CLAIM_CONTROLLER_ARGS, '--fast-path-max-claims-per-namespace', String(CAP)] },
    },
  });
  dispatcher = new Agent({ connect: { ca: sys.servingCa, servername: sys.servernameOf(sys.fastPathUrl) } });
  const kc = sys.kubeConfig;
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  const bind = (
    namespace: string,
    name: string,
    role: { kind: 'Role' | 'ClusterRole'; name: string },
    sa: { name: string; namespace: string },
  ) =>
    rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', ...role },
        subjects: [{ kind: 'ServiceAccount', ...sa }],
      },
    });
  // alice edits her namespace (the chart folds sandboxes and the claim CRDs into edit)
  await userKubeconfig(ns, 'alice');
  await grantEditRole(kc, ns, 'alice');
  // mallory, in the same namespace, may only create and delete sandboxclaims
  await userKubeconfig(ns, 'mallory');
  await rbac.createNamespacedRole({
    namespace: ns,
    body: {
      metadata: { name: 'claims-create-delete' },
      rules: [{ apiGroups: [GROUP], resources: ['sandboxclaims'], verbs: ['create', 'delete'] }],
    },
  });
  await bind(ns, 'mallory', { kind: 'Role', name: 'claims-create-delete' }, { name: 'mallory', namespace: ns });
  // carol uses the fast path in two other namespaces
  await userKubeconfig(quotaNs, 'carol');
  for (const n of [quotaNs, capNs]) {
    await rbac.createNamespacedRole({
      namespace: n,
      body: { metadata: { name: 'claims-create' }, rules: [{ apiGroups: [GROUP], resources: ['sandboxclaims'], verbs: ['create'] }] },
    });
    await bind(n, 'carol', { kind: 'Role', name: 'claims-create' }, { name: 'carol', namespace: quotaNs });
  }
  for (const [n, replicas] of [
    [ns, 6],
    [quotaNs, 1],
    [capNs, CAP + 1],
  ] as const)
    await applyWarmPool(sys, n, { image: IMAGE, replicas });
  for (const [n, replicas] of [
    [ns, 6],
    [quotaNs, 1],
    [capNs, CAP + 1],
  ] as const)
    await waitPoolReady(sys, n, replicas, { atLeast: true, timeoutMs: 90_000 });
}, 300_000);

afterAll(async () => {
  await dispatcher?.close();
  await sys?.stop();
}, 120_000);

describe('tenants stay apart', () => {
  it("a claim named after another user's aggregated-API Sandbox gets neither the VM nor its token", async () => {
    const sandbox = {
      apiVersion: 'agents.x-k8s.io/v1beta1',
      kind: 'Sandbox',
      metadata: { name: 'victim-sb', namespace: ns },
      spec: {
        podTemplate: { spec: { containers: [{ name: 'agent', image: IMAGE, resources: { requests: { cpu: '1', memory: '1Gi' } } }] } },
      },
    };
    // --validate=false: client-side validation lists CRDs, which alice may not
    const created = JSON.parse(
      (await k(['create', '--validate=false', '-f', '-', '-o', 'json'], { as: 'alice', input: JSON.stringify(sandbox) })).stdout,
    ) as { metadata: { annotations?: Record<string, string> }; status?: { nodeName?: string } };
    const id = created.metadata.annotations?.['sandbox.cocoonstack.io/claim-id'] ?? '';
    const token = created.metadata.annotations?.['sandbox.cocoonstack.io/token'] ?? '';
    expect(id).toMatch(/^sb_/);
    expect(token).not.toBe('');
    const node = sys.nodes.find((n) => n.name === created.status?.nodeName) ?? (sys.nodes[0] as SandboxdNode);
    victims.push({ what: 'aggregated-api Sandbox', id, token, node });
    // a pool that does not exist keeps the attacker's claim unbound: the state in which an
    // orphan pass that matched by namespace/name would adopt the victim's VM
    await k(['create', '-f', '-'], { as: 'mallory', input: claimBody(ns, 'victim-sb', NO_POOL) });
  });

  it("a claim created again under a deleted claim's name (another uid) gets neither its VM nor its token", async () => {
    await k(['create', '-f', '-'], { as: 'alice', input: claimBody(ns, 'alice-c', NO_POOL) });
    const first = (await claimOf(ns, 'alice-c')) as Claim;
    await k(['delete', 'sandboxclaim', 'alice-c', '-n', ns, '--wait=true'], { as: 'alice' });
    // the VM of that first claim outlived it on the node (its record never landed)
    const node = sys.nodes[0] as SandboxdNode;
    const delivered = await nodeCall(node, '/v1/claim', {
      method: 'POST',
      body: { template: IMAGE, claim_ref: `claim:${first.metadata.uid}:${ns}/alice-c` },
    });
    expect(delivered.status).toBe(200);
    victims.push({ what: 'claim of a deleted uid', id: String(delivered.body.id), token: String(delivered.body.token), node });
    await k(['create', '-f', '-'], { as: 'mallory', input: claimBody(ns, 'alice-c', NO_POOL) });
    expect((await claimOf(ns, 'alice-c'))?.metadata.uid).not.toBe(first.metadata.uid);
  });

  it('the fast path never records over a claim of the name that exists', async () => {
    await k(['create', '-f', '-'], { as: 'alice', input: claimBody(ns, 'alice-held', 'agent') });
    const held = await eventually(
      async () => {
        const c = await claimOf(ns, 'alice-held');
        if (!c?.status?.sandbox?.claimID) throw new Error('alice-held not Bound yet');
        return c;
      },
      { timeoutMs: 30_000 },
    );
    const r = await fastClaim('mallory', { namespace: ns, name: 'alice-held', warmPool: 'agent' });
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ kind: 'Status', reason: 'AlreadyExists' });
    const after = await claimOf(ns, 'alice-held');
    attempts.push({
      what: 'fast-path record over an existing claim',
      refused: r.status === 409 && after?.status?.sandbox?.claimID === held.status?.sandbox?.claimID,
    });
  });

  it('a fast-path delivery whose record a ResourceQuota refuses is recorded by the orphan pass once it may be', async () => {
    await k(['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'ResourceQuota',
        metadata: { name: 'no-claims', namespace: quotaNs },
        spec: { hard: { [`count/sandboxclaims.${GROUP}`]: '0' } },
      }),
    });
    // this control plane runs no resourcequota controller: write the status it would (admission
    // enforces status.hard against status.used)
    const counted = `count/sandboxclaims.${GROUP}`;
    await k([
      'patch',
      'resourcequota',
      'no-claims',
      '-n',
      quotaNs,
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: { hard: { [counted]: '0' }, used: { [counted]: '0' } } }),
    ]);
    // in force once a create of any SandboxClaim there is refused (dry run: nothing is written)
    await eventually(async () => {
      const r = await kubectl(['create', '--dry-run=server', '-f', '-'], {
        kubeconfig: sys.kubeconfigPath,
        input: claimBody(quotaNs, 'probe', 'agent'),
      });
      if (r.code === 0 || !/quota/i.test(r.stderr)) throw new Error(`quota not in force yet: ${r.stderr}`);
    });
    // quota sees only the record, not the request: the caller gets its VM
    const r = await fastClaim('carol', { namespace: quotaNs, name: 'canary', warmPool: 'agent' });
    expect(r.status).toBe(200);
    const a = r.body as unknown as Assignment;
    await eventually(
      async () => {
        // the log of the claim-controller replica that served the request (installed: either pod)
        const lines = [...(await sys.appLogs())]
          .filter(([app]) => app.startsWith('claim-controller') || app.includes('-claim-controller-'))
          .flatMap(([, text]) => text.split('\n'))
          .filter((l) => l.includes('"canary"') && l.includes('bound record failed; orphan left'));
        if (lines.length === 0) throw new Error('the record of canary has not given up yet');
      },
      { timeoutMs: 60_000 },
    );
    expect(await claimOf(quotaNs, 'canary')).toBeUndefined();
    deliveries.push({ namespace: quotaNs, name: 'canary', claimId: a.claimId, token: a.token, firstRecordFailed: true });
    await k(['delete', 'resourcequota', 'no-claims', '-n', quotaNs]);
    const c = await eventually(
      async () => {
        const got = await claimOf(quotaNs, 'canary');
        if (!got?.status?.conditions?.some((x) => x.type === 'Bound' && x.status === 'True')) throw new Error('canary not recorded yet');
        return got;
      },
      { timeoutMs: 60_000 },
    );
    expect(c.status?.sandbox?.claimID).toBe(a.claimId);
    expect((await secretTokens(quotaNs)).get(a.token)).toBe(c.status?.sandbox?.tokenSecretName);
  });

  it('caps live fast-path claims per namespace, refusing before any VM is claimed', async () => {
    for (let i = 0; i < CAP; i++) {
      const r = await fastClaim('carol', { namespace: capNs, name: `fast-${i}`, warmPool: 'agent' });
      expect(r.status).toBe(200);
      const a = r.body as unknown as Assignment;
      deliveries.push({ namespace: capNs, name: `fast-${i}`, claimId: a.claimId, token: a.token, firstRecordFailed: false });
    }
    const before = await nodeDeliveriesIn(capNs);
    const over = await fastClaim('carol', { namespace: capNs, name: 'fast-over', warmPool: 'agent' });
    expect(over.status).toBe(429);
    expect(over.body).toMatchObject({ kind: 'Status', reason: 'TooManyRequests', code: 429 });
    expect(String(over.body.message)).toContain(`the cap is ${CAP}`);
    expect(await nodeDeliveriesIn(capNs)).toBe(before);
  });

  it("the victims' VMs were never adopted, their tokens never copied, and deleting the attackers' claims releases nothing", async () => {
    // the canary was delivered after both attack claims existed and was recorded by an orphan
    // pass that started after its delivery: that pass saw the victims' VMs and the attackers' claims
    const tokens = await secretTokens(ns);
    for (const [i, name] of ['victim-sb', 'alice-c'].entries()) {
      const v = victims[i] as (typeof victims)[number];
      const claim = await claimOf(ns, name);
      expect(claim).toBeDefined();
      attempts.push({ what: `adopt the VM of an ${v.what}`, refused: claim !== undefined && claim.status?.sandbox?.claimID !== v.id });
      attempts.push({ what: `copy the token of an ${v.what}`, refused: !tokens.has(v.token) });
    }
    // mallory may not get claims, so kubectl cannot wait for her: the admin watches them go
    for (const name of ['victim-sb', 'alice-c']) await k(['delete', 'sandboxclaim', name, '-n', ns, '--wait=false'], { as: 'mallory' });
    await eventually(
      async () => {
        for (const name of ['victim-sb', 'alice-c']) if (await claimOf(ns, name)) throw new Error(`${name} still there`);
      },
      { timeoutMs: 30_000 },
    );
    for (const v of victims)
      attempts.push({ what: `release the VM of an ${v.what} by deleting the attacker's claim`, refused: await liveOnNode(v.id) });
    // the aggregated-API Sandbox is still alice's
    const still = await k(
      ['get', 'sandbox', 'victim-sb', '-n', ns, '-o', 'jsonpath={.metadata.annotations.sandbox\\.cocoonstack\\.io/claim-id}'],
      { as: 'alice' },
    );
    expect(still.stdout).toBe(victims[0]?.id);
    expect(attempts.filter((x) => !x.refused).map((x) => x.what)).toEqual([]);
  });

  it('every fast-path delivery is a SandboxClaim Bound to its VM, and reports the figures', async () => {
    const recorded = await eventually(
      async () => {
        const list = JSON.parse((await k(['get', 'sandboxclaims', '-A', '-o', 'json'])).stdout) as { items: Claim[] };
        const byId = new Map(list.items.map((c) => [c.status?.sandbox?.claimID, c]));
        const missing = deliveries.filter((d) => byId.get(d.claimId)?.metadata.name !== d.name);
        if (missing.length > 0) throw new Error(`not recorded yet: ${missing.map((d) => d.name).join(', ')}`);
        return deliveries.length - missing.length;
      },
      { timeoutMs: 60_000 },
    );
    const figures = {
      suite: 'security-tenancy',
      cross_tenant_attempts: attempts.length,
      cross_tenant_refused: attempts.filter((x) => x.refused).length,
      fast_path_deliveries: deliveries.length,
      fast_path_recorded: recorded,
      fast_path_recorded_pct: (100 * recorded) / deliveries.length,
      fast_path_first_record_failed: deliveries.filter((d) => d.firstRecordFailed).length,
    };
    console.log(JSON.stringify(figures));
    expect(figures.cross_tenant_attempts).toBe(7);
    expect(figures.cross_tenant_refused).toBe(figures.cross_tenant_attempts);
    expect(figures.fast_path_deliveries).toBe(CAP + 1);
    expect(figures.fast_path_recorded).toBe(figures.fast_path_deliveries);
    expect(figures.fast_path_recorded_pct).toBe(100);
    expect(figures.fast_path_first_record_failed).toBe(1);
  });
});

/** Live deliveries on the nodes whose owner is in `namespace`. */
async function nodeDeliveriesIn(namespace: string): Promise<number> {
  let n = 0;
  for (const node of sys.nodes) {
    const rows = ((await nodeCall(node, '/v1/sandboxes')).body.sandboxes ?? []) as { claim_ref?: string }[];
    n += rows.filter((r) => r.claim_ref?.includes(`:${namespace}/`)).length;
  }
  return n;
}
