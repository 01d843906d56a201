import { CoreV1Api, CustomObjectsApi, RbacAuthorizationV1Api, Watch, type KubeConfig } from '@kubernetes/client-node';
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { Agent, request, type RequestOptions } from 'node:https';
import { join } from 'node:path';
import { eventually, kubeconfigForServiceAccount, kubectl, runSuffix, testBinDir, type RunResult } from '../src/index';
import { startLocalSystem, type LocalSystem, type SimNode } from '../src/system/local-system';

// Faults of the whole system, each printing its figures as one JSON line: a claim-controller
// killed mid-burst, a partitioned node, a deleted NodeInventory, a restarted sandbox-apiserver
// under a watch, failing sandboxd replies, hostile request bodies, and tokens kept out of sight.

const ns = `t-faults-${runSuffix()}`;
const GROUP = 'extensions.agents.x-k8s.io';
const VERSION = 'v1beta1';
const IMAGE = 'ghcr.io/example/faults-agent:1.0';
const POOL = 'agent';
const POOL_REPLICAS = 60;
const BURST = Number(process.env.FAULTS_BURST ?? 1000);
const HOSTILE_SECONDS = Number(process.env.FAULTS_HOSTILE_SECONDS ?? 60);

let sys: LocalSystem;
let custom: CustomObjectsApi;
let clientToken: string;
let ca: string;
const agent = new Agent({ keepAlive: true, maxSockets: 16 });

interface Cond {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}
interface Claim {
  metadata: { name: string; namespace?: string };
  status?: { conditions?: Cond[]; sandbox?: { name?: string; nodeName?: string; tokenSecretName?: string } };
}
interface SimRow {
  id: string;
  claim_ref?: string;
}

function figures(fig: Record<string, unknown>): void {
  console.log(JSON.stringify(fig));
}

async function k(args: string[], input?: string): Promise<RunResult> {
  const r = await kubectl(args, { kubeconfig: sys.kubeconfigPath, input });
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
  return r;
}

function isBound(c: Claim): boolean {
  return c.status?.conditions?.some((x) => x.type === 'Bound' && x.status === 'True') ?? false;
}

async function listClaims(): Promise<Claim[]> {
  const res = (await custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: 'sandboxclaims' })) as { items: Claim[] };
  return res.items;
}

async function createClaim(name: string): Promise<void> {
  await custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: 'sandboxclaims',
    body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'SandboxClaim', metadata: { name, namespace: ns }, spec: { warmPoolRef: { name: POOL } } } });
}

async function waitBound(names: string[], timeoutMs: number): Promise<Claim[]> {
  return eventually(async () => {
    const byName = new Map((await listClaims()).map((c) => [c.metadata.name, c]));
    const unbound = names.filter((n) => { const c = byName.get(n); return !c || !isBound(c); });
    if (unbound.length > 0) throw new Error(`${unbound.length}/${names.length} claims not Bound yet (e.g. ${unbound.slice(0, 3).join(', ')})`);
    return names.map((n) => byName.get(n) as Claim);
  }, { timeoutMs, intervalMs: 1000 });
}

async function sim(node: SimNode, path: string, init: { method?: string; body?: unknown } = {}): Promise<Response> {
  return fetch(`${node.url}${path}`, {
    method: init.method ?? 'GET',
    headers: { authorization: `Bearer ${sys.fleetToken}`, ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
}

async function setFaults(node: SimNode, faults: Record<string, unknown>): Promise<void> {
  const res = await sim(node, '/_sim/faults', { method: 'POST', body: faults });
  if (res.status !== 200) throw new Error(`faults on ${node.name}: ${res.status} ${await res.text()}`);
}

async function clearFaults(node: SimNode): Promise<void> {
  await sim(node, '/_sim/faults', { method: 'DELETE' });
}

async function simRows(node: SimNode): Promise<SimRow[]> {
  const res = await sim(node, '/v1/sandboxes');
  return ((await res.json()) as { sandboxes: SimRow[] }).sandboxes;
}

/** Counters summed over every node (sandboxd_claims_total over tiers, sandboxd_releases_total). */
async function simCounters(): Promise<{ claims: number; releases: number }> {
  let claims = 0;
  let releases = 0;
  for (const n of sys.nodes) {
    const text = await (await sim(n, '/metrics')).text();
    for (const line of text.split('\n')) {
      const m = /^(sandboxd_claims_total|sandboxd_releases_total)(\{[^}]*\})? (\d+(?:\.\d+)?)$/.exec(line);
      if (!m) continue;
      if (m[1] === 'sandboxd_claims_total') claims += Number(m[3]);
      else releases += Number(m[3]);
    }
  }
  return { claims, releases };
}

function appsRunning(): string[] {
  return [...sys.apps].filter(([, a]) => !a.running).map(([n]) => n);
}

interface HttpReply {
  status: number;
  text: string;
}

/** One HTTPS request with the given CA and auth (bearer token or a KubeConfig's client cert). */
function httpsRequest(url: string, method: string, body: string | Buffer | undefined, auth: { token?: string; kc?: KubeConfig }, contentType = 'application/json'): Promise<HttpReply> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const opts: RequestOptions = { method, hostname: u.hostname, port: u.port, path: `${u.pathname}${u.search}`, agent, headers: { 'content-type': contentType, accept: 'application/json' } };
    const go = (): void => {
      const req = request(opts, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    };
    if (auth.kc) {
      auth.kc.applyToHTTPSOptions(opts).then(() => { opts.agent = agent; go(); }, reject);
    } else {
      opts.ca = ca;
      opts.headers = { ...opts.headers, authorization: `Bearer ${auth.token ?? ''}` };
      go();
    }
  });
}

/** A kubectl process whose stdout is collected until it is stopped. */
function kubectlStream(args: string[]): { out: () => string; proc: ChildProcess; stop: () => Promise<void> } {
  let out = '';
  const proc = spawn(join(testBinDir(), 'kubectl'), args, { env: { ...process.env, KUBECONFIG: sys.kubeconfigPath }, stdio: ['ignore', 'pipe', 'pipe'] });
  proc.stdout?.on('data', (c: Buffer) => (out += c.toString('utf8')));
  const exited = new Promise<void>((res) => proc.once('exit', () => res()));
  return { out: () => out, proc, stop: async () => { if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM'); await exited; } };
}

/** Parses concatenated pretty-printed JSON objects (kubectl -w -o json). */
function jsonStream(text: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  let depth = 0;
  let start = -1;
  let inStr = false;
  let esc = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (inStr) {
      if (esc) esc = false;
      else if (ch === '\\') esc = true;
      else if (ch === '"') inStr = false;
      continue;
    }
    if (ch === '"') inStr = true;
    else if (ch === '{') { if (depth++ === 0) start = i; }
    else if (ch === '}' && --depth === 0) out.push(JSON.parse(text.slice(start, i + 1)) as Record<string, unknown>);
  }
  return out;
}

async function poolReady(replicas: number): Promise<void> {
  await eventually(async () => {
    const pool = (await custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: 'sandboxwarmpools', name: POOL })) as { status?: { readyReplicas?: number } };
    if (pool.status?.readyReplicas !== replicas) throw new Error(`pool ready ${pool.status?.readyReplicas ?? 0}/${replicas}`);
  }, { timeoutMs: 90_000, intervalMs: 500 });
}

beforeAll(async () => {
  const t0 = Date.now();
  sys = await startLocalSystem({
    nodes: 3,
    speed: 0,
    examples: false,
    claimNamespaces: [ns],
    publishInterval: '1s',
    extraArgs: { 'claim-controller': ['--orphan-interval', '5s', '--max-concurrent-reconciles', '32'] },
    beforeInstall: async (kc) => {
      await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: ns } } });
    },
  });
  custom = sys.kubeConfig.makeApiClient(CustomObjectsApi);
  ca = readFileSync(sys.servingCaPath, 'utf8');
  const rbac = sys.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createNamespacedRole({ namespace: ns, body: { metadata: { name: 'client' }, rules: [
    { apiGroups: [GROUP], resources: ['sandboxclaims'], verbs: ['create', 'get', 'list'] },
    { apiGroups: ['agents.x-k8s.io'], resources: ['sandboxes'], verbs: ['create', 'get', 'list', 'watch'] },
  ] } });
  const clientKc = await kubeconfigForServiceAccount(sys.kubeConfig, ns, 'client');
  await rbac.createNamespacedRoleBinding({ namespace: ns, body: { metadata: { name: 'client' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'client' },
    subjects: [{ kind: 'ServiceAccount', name: 'client', namespace: ns }] } });
  clientToken = clientKc.getCurrentUser()?.token ?? '';
  const template = { apiVersion: `${GROUP}/${VERSION}`, kind: 'SandboxTemplate', metadata: { name: POOL, namespace: ns },
    spec: { podTemplate: { spec: { containers: [{ name: 'agent', image: IMAGE, resources: { requests: { cpu: '1', memory: '1Gi' } } }] } } } };
  const pool = { apiVersion: `${GROUP}/${VERSION}`, kind: 'SandboxWarmPool', metadata: { name: POOL, namespace: ns }, spec: { replicas: POOL_REPLICAS, sandboxTemplateRef: { name: POOL } } };
  await k(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [template, pool] }));
  await poolReady(POOL_REPLICAS);
  figures({ setup: 'local-system', nodes: sys.nodes.length, pool_replicas: POOL_REPLICAS, start_s: (Date.now() - t0) / 1000 });
}, 300_000);

afterAll(async () => {
  agent.destroy();
  await sys?.stop();
}, 120_000);

describe('sandbox-scale under faults', () => {
  it('binds every claim of a burst once, destroying no VM, when claim-controller is SIGKILLed mid-burst', async () => {
    const before = await simCounters();
    const names = Array.from({ length: BURST }, (_, i) => `burst-${String(i).padStart(4, '0')}`);
    const t0 = Date.now();
    let created = 0;
    let killed: Promise<void> | undefined;
    let killedAt = 0;
    const queue = [...names];
    const worker = async (): Promise<void> => {
      for (let name = queue.shift(); name !== undefined; name = queue.shift()) {
        await createClaim(name);
        created++;
        if (created === Math.floor(BURST / 3) && !killed) {
          killedAt = Date.now();
          killed = sys.restartApp('claim-controller', { kill: true });
        }
      }
    };
    await Promise.all(Array.from({ length: 16 }, () => worker()));
    const createdS = (Date.now() - t0) / 1000;
    await killed;
    const restartedAt = Date.now();
    const claims = await waitBound(names, 240_000);
    const healS = (Date.now() - restartedAt) / 1000;

    const ids = claims.map((c) => c.status?.sandbox?.name ?? '');
    expect(ids.every((id) => id !== '')).toBe(true);
    const refs = new Map<string, number>();
    for (const n of sys.nodes) {
      for (const row of await simRows(n)) if (row.claim_ref?.startsWith(`${ns}/burst-`)) refs.set(row.claim_ref, (refs.get(row.claim_ref) ?? 0) + 1);
    }
    const doubles = [...refs.values()].filter((v) => v > 1).length + (ids.length - new Set(ids).size);
    const after = await simCounters();
    figures({ fault: 'sigkill-claim-controller', claims: BURST, bound: claims.filter(isBound).length, released: after.releases - before.releases,
      node_claims: after.claims - before.claims, double_deliveries: doubles, create_s: createdS, killed_after_s: (killedAt - t0) / 1000, heal_s: healS, total_s: (Date.now() - t0) / 1000 });
    expect(new Set(ids).size).toBe(BURST);
    expect(refs.size).toBe(BURST);
    expect(doubles).toBe(0);
    expect(after.releases - before.releases).toBe(0);
    expect(after.claims - before.claims).toBe(BURST);
    expect(appsRunning()).toEqual([]);
  }, 420_000);
});
