import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { KubernetesObject } from '@kubernetes/client-node';
import { fetch } from 'undici';
import { kubectlJson, kubectlOk, runSuffix } from '../src/index';
import { INSTALLED_NAMESPACE } from '../src/installed/installed-system';
import { ROUTER_SERVICE_NAME } from '../src/installed/installed-values';
import { runProcess } from '../src/system/run-command';
import { applyWarmPool, startSuiteSystem, waitPoolReady } from '../src/system/suite-system';
import type { SystemUnderTest } from '../src/system/system-under-test';
import { routerAgent } from '../src/testing/router-client';
import { upstreamPythonVenv } from '../src/testing/upstream-python';

// agent-sandbox's Python client in its default LocalTunnel mode against the chart as installed
// (router.serviceName=sandbox-router-svc, router.tunnel.enabled=true): the client checks that
// svc/sandbox-router-svc exists, runs `kubectl port-forward svc/sandbox-router-svc <port>:8080`
// in the router's namespace and sends plain HTTP with the routing headers and no bearer token.
// The port-forward arrives on the loopback of a sandbox-apiserver pod, where the router's tunnel
// listener serves it; kube-apiserver has authorized the port-forward itself (the admin kubeconfig
// may create pods/portforward). The Service and the pods' addresses still demand a token.

const ns = `t-tunnel-${runSuffix()}`;
const POOL = 'agent';
/** Claimed by the Python client through create_sandbox. */
const PY_CLAIM = 'py-tunnel';
/** Claimed by the test, attached to by the Python client through get_sandbox. */
const TEST_CLAIM = 'test-tunnel';
/** BLOB of tunnel_client_flow.py: the 256 byte values 16 times, then NUL, 0xff, 0xfe and " tunnel". */
const BLOB_BYTES = 256 * 16 + 10;
const ROUTER_PORT = 8080;
const NO_TOKEN = { status: 401, body: { detail: 'A bearer token is required: Authorization: Bearer <Kubernetes token>.' } };

let system: SystemUnderTest;
let workDir: string;
let python: string;

interface TunnelFlow {
  sandboxId: string;
  refused?: { status: number; detail: string };
  echo?: { stdout: string; stderr: string; exitCode: number };
  written?: number;
  roundTrip?: boolean;
  exists?: boolean;
  missingExists?: boolean;
}

type Pod = KubernetesObject & {
  metadata: { name: string; deletionTimestamp?: string };
  status?: { podIP?: string; conditions?: { type: string; status: string }[] };
};
type Service = KubernetesObject & {
  spec: { type: string; clusterIP: string; ports: { name?: string; port: number; targetPort: unknown; protocol?: string }[] };
};

/** The router's base URL at a pod's address (an IPv6 one in brackets). */
const atPod = (p: Pod): string => {
  const ip = p.status?.podIP ?? '';
  return `https://${ip.includes(':') ? `[${ip}]` : ip}:${ROUTER_PORT}`;
};

/** tunnel_client_flow.py in LocalTunnel mode, with the admin kubeconfig and the tools' kubectl first on PATH. */
async function tunnelFlow(claim: string, pool?: string): Promise<TunnelFlow> {
  const args = [join(__dirname, 'upstream', 'tunnel_client_flow.py'), `tunnel:${INSTALLED_NAMESPACE}`, ns, claim, ...(pool ? [pool] : [])];
  const r = await runProcess(python, args, {
    KUBECONFIG: system.kubeconfigPath,
    PATH: [system.binDir, process.env['PATH'] ?? ''].join(delimiter),
  });
  if (r.code !== 0) throw new Error(`tunnel_client_flow.py exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as TunnelFlow;
}

/**
 * A routed request without a token, as LocalTunnel sends it, to a router address of the cluster
 * network: over TLS, checked against the router Service's name, which every replica's certificate holds.
 */
async function untokened(base: string): Promise<{ status: number; body: unknown }> {
  const dispatcher = routerAgent(system, await system.routerUrl());
  const res = await fetch(`${base}/list/.`, {
    dispatcher,
    headers: { 'x-sandbox-id': TEST_CLAIM, 'x-sandbox-namespace': ns, 'x-sandbox-port': '8888' },
  });
  const body = (await res.json()) as unknown;
  await dispatcher.close();
  return { status: res.status, body };
}

async function apiserverPods(): Promise<Pod[]> {
  const list = await kubectlJson<{ items: Pod[] }>(
    ['-n', INSTALLED_NAMESPACE, 'get', 'pods', '-l', 'app.kubernetes.io/component=sandbox-apiserver'],
    {
      kubeconfig: system.kubeconfigPath,
    },
  );
  // Ready ones: each listens on its router port by then
  return list.items.filter(
    (p) => !p.metadata.deletionTimestamp && p.status?.podIP && p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
  );
}

const flowOk = (sandboxId: string): TunnelFlow => ({
  sandboxId,
  echo: { stdout: 'hi\n', stderr: '', exitCode: 0 },
  written: BLOB_BYTES,
  roundTrip: true,
  exists: true,
  missingExists: false,
});

beforeAll(async () => {
  workDir = mkdtempSync(join(tmpdir(), 'upstream-tunnel-'));
  const venvReady = upstreamPythonVenv(workDir);
  system = await startSuiteSystem({ namespaces: [ns] });
  python = await venvReady;
  await applyWarmPool(system, ns, { name: POOL, image: 'ghcr.io/example/python-runtime:1.0', replicas: 2 });
  await waitPoolReady(system, ns, 2, { atLeast: true });
  await kubectlOk(['apply', '-f', '-'], {
    kubeconfig: system.kubeconfigPath,
    input: JSON.stringify({
      apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
      kind: 'SandboxClaim',
      metadata: { name: TEST_CLAIM, namespace: ns },
      spec: { warmPoolRef: { name: POOL } },
    }),
  });
  await kubectlOk(['-n', ns, 'wait', '--for=condition=Ready', `sandboxclaim/${TEST_CLAIM}`, '--timeout=90s'], {
    kubeconfig: system.kubeconfigPath,
  });
}, 400_000);

afterAll(async () => {
  if (system) await kubectlOk(['delete', 'namespace', ns, '--wait=false'], { kubeconfig: system.kubeconfigPath }).catch(() => undefined);
  await system?.stop();
  if (workDir) rmSync(workDir, { recursive: true, force: true });
}, 60_000);

describe("agent-sandbox's Python client in LocalTunnel mode", () => {
  it('finds the router Service it port-forwards to in the release namespace, on port 8080', async () => {
    const svc = await kubectlJson<Service>(['-n', INSTALLED_NAMESPACE, 'get', 'service', ROUTER_SERVICE_NAME], {
      kubeconfig: system.kubeconfigPath,
    });
    expect({ type: svc.spec.type, ports: svc.spec.ports }).toEqual({
      type: 'ClusterIP',
      ports: [{ name: 'https', port: ROUTER_PORT, targetPort: 'router', protocol: 'TCP' }],
    });
  });

  it('claims from a warm pool, runs a command and moves a file through kubectl port-forward, without a token', async () => {
    const out = await tunnelFlow(PY_CLAIM, POOL);
    process.stdout.write(`python client in LocalTunnel mode (create_sandbox): ${JSON.stringify(out)}\n`);
    expect(out).toEqual(flowOk(PY_CLAIM));
  }, 180_000);

  it('attaches to a claim the caller made and does the same', async () => {
    const out = await tunnelFlow(TEST_CLAIM);
    process.stdout.write(`python client in LocalTunnel mode (get_sandbox): ${JSON.stringify(out)}\n`);
    expect(out).toEqual(flowOk(TEST_CLAIM));
  }, 180_000);
});

describe("the router's authenticated listener, from the cluster network", () => {
  it("answers 401 without a token at the Service's cluster IP and at every sandbox-apiserver pod's address", async () => {
    expect(await untokened(await system.routerUrl())).toEqual(NO_TOKEN);
    const pods = await apiserverPods();
    expect(pods.length).toBeGreaterThan(0);
    for (const p of pods) {
      expect({ pod: p.metadata.name, reply: await untokened(atPod(p)) }).toEqual({ pod: p.metadata.name, reply: NO_TOKEN });
    }
  });

  it('runs on the pod address in each pod, and the tunnel listener on its loopback, each saying so at start', async () => {
    const pods = await apiserverPods();
    const logs = await system.appLogs();
    const said = pods.map((p) => {
      const lines = (logs.get(p.metadata.name) ?? '')
        .split('\n')
        .filter((l) => l.includes('"msg":"router listening"') || l.includes('"msg":"router tunnel listening"'));
      const fields = lines.map((l) => JSON.parse(l) as { msg: string; url: string; authentication: string });
      return { pod: p.metadata.name, listening: fields.map((f) => ({ msg: f.msg, url: f.url, authentication: f.authentication })) };
    });
    expect(said).toEqual(
      pods.map((p) => ({
        pod: p.metadata.name,
        listening: [
          { msg: 'router listening', url: atPod(p), authentication: 'kubernetes' },
          { msg: 'router tunnel listening', url: `http://127.0.0.1:${ROUTER_PORT}`, authentication: 'none' },
        ],
      })),
    );
  });
});
