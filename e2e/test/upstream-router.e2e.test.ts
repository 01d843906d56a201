import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RbacAuthorizationV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { fetch, type Agent, type Headers } from 'undici';
import { eventually, freePort, runSuffix, kubectlOk, kubectlJson } from '../src/index';
import { runProcess } from '../src/system/run-command';
import { applyWarmPool, itWhere, startSuiteSystem, waitPoolReady } from '../src/system/suite-system';
import { e2eTarget, type SystemUnderTest, type TenantCredentials } from '../src/system/system-under-test';
import { routerAgent, routerForPython } from '../src/testing/router-client';
import { grantEditRole } from '../src/testing/tenant-role';
import { upstreamPythonVenv } from '../src/testing/upstream-python';

// agent-sandbox's Python client reaches a claimed microVM's guest runtime through the sandbox
// router, exactly as it reaches a Pod's through upstream's sandbox-router: Direct mode at the
// router's URL, the caller's Kubernetes token in extra_headers. The router checks that token
// (TokenReview) and `create sandboxes/portforward` (SubjectAccessReview) on each request, then
// relays it to the guest's port 8888 through the sandbox's node.

const ns = `t-router-${runSuffix()}`;
const otherNs = `t-router-other-${runSuffix()}`;
const POOL = 'agent';
/** A claim of the TypeScript checks; the Python client makes its own. */
const TS_CLAIM = 'ts-router';
const PY_CLAIM = 'py-router';
/** BLOB of router_client_flow.py: the 256 byte values 64 times, then NUL, 0xff, 0xfe and " end". */
const BLOB_BYTES = 256 * 64 + 7;

let system: SystemUnderTest;
let workDir: string;
let python: string;
let routerUrl: string;
/** Checks the router's certificate (HTTPS, the serving CA). */
let routerDispatcher: Agent;
/** The router as the Python client reaches it: the URL its certificate names, with ROUTER_CA and ROUTER_ADDRESS. */
let pythonRouter: { url: string; env: Record<string, string> };
/** The local sandbox-apiserver's tunnel listener (no authentication, on the loopback); the installed one is reached by kubectl port-forward only. */
let tunnelUrl: string;
const local = e2eTarget() === 'local';
let alice: TenantCredentials;
let viewer: TenantCredentials;
let bob: TenantCredentials;

type Claim = KubernetesObject & { status?: { sandbox?: { name?: string; tokenSecretName?: string } } };

/** Every reply the router gave the TypeScript checks, headers and body, searched for tokens at the end. */
const replies: string[] = [];

interface Reply {
  status: number;
  body: string;
  headers: Headers;
}

async function route(headers: Record<string, string>, o: { method?: string; path?: string; body?: string } = {}): Promise<Reply> {
  const res = await fetch(`${routerUrl}${o.path ?? '/'}`, {
    dispatcher: routerDispatcher,
    method: o.method ?? 'GET',
    headers,
    ...(o.body !== undefined ? { body: o.body } : {}),
  });
  const body = await res.text();
  replies.push(`${res.status} ${JSON.stringify([...res.headers])} ${body}`);
  return { status: res.status, body, headers: res.headers };
}

const to = (token: string | undefined, sandbox: string, namespace = ns, extra: Record<string, string> = {}): Record<string, string> => ({
  ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}),
  'x-sandbox-id': sandbox,
  'x-sandbox-namespace': namespace,
  ...extra,
});

const detail = (r: Reply): unknown => ({ status: r.status, body: JSON.parse(r.body) as unknown });

async function sandboxToken(claim: string): Promise<string> {
  const c = await kubectlJson<Claim>(['-n', ns, 'get', 'sandboxclaim', claim], { kubeconfig: system.kubeconfigPath });
  const secret = await kubectlJson<{ data: Record<string, string> }>(
    ['-n', ns, 'get', 'secret', c.status?.sandbox?.tokenSecretName ?? ''],
    {
      kubeconfig: system.kubeconfigPath,
    },
  );
  return Buffer.from(secret.data['token'] ?? '', 'base64').toString();
}

beforeAll(async () => {
  workDir = mkdtempSync(join(tmpdir(), 'upstream-router-'));
  // the venv is made while the system starts: both take a while
  const venvReady = upstreamPythonVenv(workDir);
  const tunnelPort = local ? await freePort() : 0;
  tunnelUrl = `http://127.0.0.1:${tunnelPort}`;
  system = await startSuiteSystem({
    namespaces: [ns, otherNs],
    local: {
      nodes: 2,
      speed: 0.02,
      publishInterval: '2s',
      // the router's second listener, as router.tunnel.enabled runs it in the chart's pods
      extraArgs: { 'sandbox-apiserver': ['--router-tunnel-bind-address', `127.0.0.1:${tunnelPort}`] },
    },
  });
  python = await venvReady;
  const kc = system.kubeConfig;
  alice = await system.tenant(ns, 'alice');
  await grantEditRole(kc, ns, 'alice');
  viewer = await system.tenant(ns, 'viewer');
  await kc.makeApiClient(RbacAuthorizationV1Api).createNamespacedRoleBinding({
    namespace: ns,
    body: {
      metadata: { name: 'viewer-view' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
      subjects: [{ kind: 'ServiceAccount', name: 'viewer', namespace: ns }],
    },
  });
  bob = await system.tenant(otherNs, 'bob');
  await grantEditRole(kc, otherNs, 'bob');
  await applyWarmPool(system, ns, { name: POOL, image: 'ghcr.io/example/python-runtime:1.0', replicas: 3 });
  await waitPoolReady(system, ns, 3, { atLeast: true });
  await kubectlOk(['apply', '-f', '-'], {
    kubeconfig: alice.path,
    input: JSON.stringify({
      apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
      kind: 'SandboxClaim',
      metadata: { name: TS_CLAIM, namespace: ns },
      spec: { warmPoolRef: { name: POOL } },
    }),
  });
  await kubectlOk(['-n', ns, 'wait', '--for=condition=Ready', `sandboxclaim/${TS_CLAIM}`, '--timeout=90s'], { kubeconfig: alice.path });
  routerUrl = await system.routerUrl();
  routerDispatcher = routerAgent(system, routerUrl);
  const caFile = join(workDir, 'router-ca.crt');
  writeFileSync(caFile, system.servingCa);
  pythonRouter = routerForPython(system, routerUrl, caFile);
}, 400_000);

afterAll(async () => {
  await routerDispatcher?.close();
  await system?.stop();
  if (workDir) rmSync(workDir, { recursive: true, force: true });
}, 60_000);

describe("agent-sandbox's Python client through the sandbox router", () => {
  it('claims a sandbox from a warm pool and runs commands and moves files in Direct mode with a bearer token', async () => {
    const r = await runProcess(python, [join(__dirname, 'upstream', 'router_client_flow.py'), ns, POOL, PY_CLAIM, pythonRouter.url], {
      KUBECONFIG: alice.path,
      ROUTER_TOKEN: alice.token,
      ...pythonRouter.env,
    });
    if (r.code !== 0) throw new Error(`router_client_flow.py exited ${r.code}: ${r.stderr}`);
    const out = JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as {
      sandboxId: string;
      echo: { stdout: string; stderr: string; exitCode: number; timedOut: boolean };
      written: number;
      roundTrip: boolean;
      readBack: string;
      listed: { name: string; size: number; type: string }[];
      exists: boolean;
      missingExists: boolean;
      slow: { exitCode: number; timedOut: boolean };
    };
    process.stdout.write(`python client through the router: ${JSON.stringify(out)}\n`);
    expect(out.sandboxId).toBe(PY_CLAIM);
    expect(out.echo).toEqual({ stdout: 'hi\n', stderr: '', exitCode: 0, timedOut: false });
    expect(out.written).toBe(BLOB_BYTES);
    expect(out.roundTrip).toBe(true);
    expect(out.readBack).toBe(Buffer.from(Array.from({ length: 16 }, (_, i) => i)).toString('base64'));
    expect(out.listed).toEqual([{ name: 'blob.bin', size: BLOB_BYTES, type: 'file' }]);
    expect(out.exists).toBe(true);
    expect(out.missingExists).toBe(false);
    // the runtime killed it at command_timeout; a killed command has no exit code of its own
    expect(out.slow).toEqual({ exitCode: -1, timedOut: true });
  }, 180_000);
});

describe('the sandbox router', () => {
  it('answers /healthz without a token', async () => {
    expect(detail(await route({}, { path: '/healthz' }))).toEqual({ status: 200, body: { status: 'ok' } });
  });

  it("relays the guest runtime's answer to a tenant who may port-forward to the sandbox", async () => {
    const r = await route(to(alice.token, TS_CLAIM, ns, { 'content-type': 'application/json' }), {
      method: 'POST',
      path: '/execute',
      body: JSON.stringify({ command: 'echo through-the-router' }),
    });
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toMatchObject({ stdout: 'through-the-router\n', exit_code: 0 });
  });

  it('answers 401 without a token and for a token the API server does not know', async () => {
    expect(detail(await route(to(undefined, TS_CLAIM), { path: '/list/.' }))).toEqual({
      status: 401,
      body: { detail: 'A bearer token is required: Authorization: Bearer <Kubernetes token>.' },
    });
    expect(detail(await route(to('made-up-token', TS_CLAIM), { path: '/list/.' }))).toEqual({
      status: 401,
      body: { detail: 'The bearer token is not valid.' },
    });
  });

  it('answers 403 to a view-only tenant and to a tenant of another namespace', async () => {
    const viewOnly = await route(to(viewer.token, TS_CLAIM), { path: '/list/.' });
    expect(viewOnly.status).toBe(403);
    expect((JSON.parse(viewOnly.body) as { detail: string }).detail).toMatch(
      new RegExp(
        `^sandboxes\\.agents\\.x-k8s\\.io "${TS_CLAIM}" is forbidden: User "system:serviceaccount:${ns}:viewer" cannot create resource "sandboxes/portforward" in API group "agents\\.x-k8s\\.io" in the namespace "${ns}"`,
      ),
    );
    const stranger = await route(to(bob.token, TS_CLAIM), { path: '/list/.' });
    expect(stranger.status).toBe(403);
    expect((JSON.parse(stranger.body) as { detail: string }).detail).toMatch(`User "system:serviceaccount:${otherNs}:bob" cannot create`);
  });

  it('answers 404 naming a sandbox that is not served, and 400 for a bad X-Sandbox-Port', async () => {
    expect(detail(await route(to(alice.token, 'no-such-sandbox'), { path: '/list/.' }))).toEqual({
      status: 404,
      body: { detail: `Sandbox "no-such-sandbox" not found in namespace "${ns}".` },
    });
    expect(detail(await route(to(alice.token, TS_CLAIM, ns, { 'x-sandbox-port': '70000' }), { path: '/list/.' }))).toEqual({
      status: 400,
      body: { detail: 'Invalid port format: X-Sandbox-Port must be an integer from 1 to 65535.' },
    });
  });

  it("never puts a sandbox's token or the caller's in a reply or in sandbox-apiserver's log", async () => {
    const tokens = { [TS_CLAIM]: await sandboxToken(TS_CLAIM), [PY_CLAIM]: await sandboxToken(PY_CLAIM), alice: alice.token };
    for (const t of Object.values(tokens)) expect(t.length).toBeGreaterThan(8);
    const logs = await eventually(
      async () => {
        const all = [...(await system.appLogs())].filter(([app]) => app.includes('sandbox-apiserver')).map(([, text]) => text);
        const text = all.join('\n');
        expect(text).toMatch(/"msg":"router listening"/);
        return text;
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    expect(replies.length).toBe(8);
    for (const [who, token] of Object.entries(tokens))
      expect({ who, inReply: replies.some((r) => r.includes(token)), inLog: logs.includes(token) }).toEqual({
        who,
        inReply: false,
        inLog: false,
      });
  });
});

/** The one JSON line tunnel_client_flow.py prints. */
interface TunnelFlow {
  sandboxId: string;
  refused?: { status: number; detail: string };
  echo?: { stdout: string; stderr: string; exitCode: number };
  written?: number;
  roundTrip?: boolean;
  exists?: boolean;
  missingExists?: boolean;
}

async function tunnelFlow(connection: string, claim: string, env: Record<string, string> = {}): Promise<TunnelFlow> {
  const r = await runProcess(python, [join(__dirname, 'upstream', 'tunnel_client_flow.py'), connection, ns, claim], {
    KUBECONFIG: alice.path,
    ...env,
  });
  if (r.code !== 0) throw new Error(`tunnel_client_flow.py exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as TunnelFlow;
}

describe("the sandbox router's tunnel listener", () => {
  const itLocal = itWhere(
    local,
    "the installed tunnel listener is on each pod's loopback: upstream-tunnel.installed.test.ts reaches it through kubectl port-forward",
  );

  itLocal(
    "serves the Python client without a token, as LocalTunnel mode's requests arrive through kubectl port-forward",
    async () => {
      const out = await tunnelFlow(`direct:${tunnelUrl}`, TS_CLAIM);
      process.stdout.write(`python client through the tunnel listener: ${JSON.stringify(out)}\n`);
      expect(out).toEqual({
        sandboxId: TS_CLAIM,
        echo: { stdout: 'hi\n', stderr: '', exitCode: 0 },
        written: 256 * 16 + 10,
        roundTrip: true,
        exists: true,
        missingExists: false,
      });
    },
    120_000,
  );

  itLocal(
    'leaves the authenticated listener refusing the same requests without a token',
    async () => {
      const out = await tunnelFlow(`direct:${pythonRouter.url}`, TS_CLAIM, pythonRouter.env);
      process.stdout.write(`python client without a token at the authenticated listener: ${JSON.stringify(out)}\n`);
      expect(out).toEqual({
        sandboxId: TS_CLAIM,
        refused: { status: 401, detail: 'A bearer token is required: Authorization: Bearer <Kubernetes token>.' },
      });
    },
    120_000,
  );

  itLocal('says at start that it runs without authentication, and where', async () => {
    const logs = [...(await system.appLogs())]
      .filter(([app]) => app.includes('sandbox-apiserver'))
      .map(([, text]) => text)
      .join('\n');
    const lines = logs.split('\n').filter((l) => l.includes('"listener":"router-tunnel"') && /tunnel listen/.test(l));
    const fields = lines.map((l) => JSON.parse(l) as { msg: string; url: string });
    expect(fields.map((f) => ({ msg: f.msg, url: f.url }))).toEqual([
      { msg: 'router tunnel listening', url: tunnelUrl },
      {
        msg: 'the sandbox router tunnel listener runs without authentication (--router-tunnel-bind-address): who may port-forward to this pod reaches the guest ports of every served sandbox through it',
        url: tunnelUrl,
      },
    ]);
  });
});
