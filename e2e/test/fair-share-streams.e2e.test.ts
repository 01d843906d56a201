import type { ClientRequest } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { connect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type { KubeConfig } from '@kubernetes/client-node';
import { Agent, fetch, request } from 'undici';
import { eventually, runSuffix } from '../src/index';
import { MAX_STREAMS_PER_NAMESPACE, ROUTER_MAX_RELAYS_PER_NAMESPACE } from '../src/installed/installed-values';
import { applyWarmPool, claimReady, startSuiteSystem } from '../src/system/suite-system';
import type { SystemUnderTest } from '../src/system/system-under-test';
import { exchange, jsonOf, kubeRaw, kubeUpgrade } from '../src/testing/data-plane-requests';
import { samples } from '../src/testing/metric-names';
import { routerAgent, routerTls } from '../src/testing/router-client';
import { grantEditRole } from '../src/testing/tenant-role';

// Connections, relays and long requests are shared fairly. Tenant A, through 25 ServiceAccounts
// that each hold the chart's edit role, opens port-forwards, long execs and router relays until it
// is refused (429: its namespace's share). Meanwhile tenant B's exec, port-forward and router call
// all succeed. Then a client that never authenticates opens 2,000 upgrades to the router and
// 2,000 to sandbox-apiserver and never closes them: every one is closed by the server.

const nsA = `fsa-${runSuffix()}`;
const nsB = `fsb-${runSuffix()}`;
const G = 'agents.x-k8s.io';
const base = (ns: string, name: string): string => `/apis/${G}/v1beta1/namespaces/${ns}/sandboxes/${name}`;
const TENANTS = 25;
const FLOOD = 2_000;

let sys: SystemUnderTest;
let routerUrl: string;
const tenantsA: { kubeConfig: KubeConfig; token: string }[] = [];
let tenantB: { kubeConfig: KubeConfig; token: string };
/** Everything tenant A holds open, closed at the end. */
const held: { destroy(): void }[] = [];

/** The sum over sandbox-apiserver replicas of a gauge's series matching `labels`. */
async function gaugeSum(dispatcher: Agent, token: string, name: string, labels: Record<string, string> = {}): Promise<number> {
  const pages = await Promise.all(
    sys.apiserverUrls.map(async (url) =>
      (await request(`${url}/metrics`, { dispatcher, headers: { authorization: `Bearer ${token}` } })).body.text(),
    ),
  );
  return pages
    .flatMap((p) => samples(p, name))
    .filter((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((a, s) => a + s.value, 0);
}

/**
 * A request that is either refused at once or held open: resolves with its status when answered,
 * or with 'held' once `isHeld` says the server holds it (a gauge went up).
 */
function heldOrRefused(req: ClientRequest, body: string, isHeld: () => Promise<boolean>): Promise<number | 'held'> {
  return new Promise((resolve, reject) => {
    let settled = false;
    req.on('response', (res) => {
      res.resume();
      if (!settled) resolve(res.statusCode ?? 0);
      settled = true;
    });
    req.on('error', (err) => {
      if (!settled) reject(err);
      settled = true;
    });
    req.end(body);
    void eventually(
      async () => {
        if (settled) return;
        if (!(await isHeld())) throw new Error('not held yet');
        settled = true;
        resolve('held');
      },
      { timeoutMs: 30_000, intervalMs: 50 },
    ).catch((err: unknown) => {
      if (!settled) reject(err instanceof Error ? err : new Error(String(err)));
    });
  });
}

async function execRequest(kc: KubeConfig, path: string): Promise<ClientRequest> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  const u = new URL(`${cluster.server}${path}`);
  const opts: RequestOptions = {
    hostname: u.hostname,
    port: u.port,
    path: u.pathname,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    agent: false,
  };
  await kc.applyToHTTPSOptions(opts);
  return httpsRequest(opts);
}

function routerRequest(token: string, namespace: string, name: string, path: string): ClientRequest {
  const u = new URL(`${routerUrl}${path}`);
  const { ca, servername } = routerTls(sys, routerUrl);
  return httpsRequest({
    ca,
    ...(servername !== undefined ? { servername } : {}),
    hostname: u.hostname,
    port: u.port,
    path: u.pathname,
    method: 'POST',
    agent: false,
    headers: {
      authorization: `Bearer ${token}`,
      'x-sandbox-id': name,
      'x-sandbox-namespace': namespace,
      'x-sandbox-port': '8888',
      'x-sandbox-timeout': '170',
      'content-type': 'application/json',
    },
  });
}

/**
 * `count` clients that open an upgrade without any credential and never close their side; they
 * read what comes and, once it ended, poke, so a socket the server destroyed resets and closes.
 * Resolves with how many closed.
 */
async function flood(open: () => Socket, count: number, requestText: string): Promise<number> {
  const closed = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<boolean>((resolve) => {
          const socket = open();
          socket.on('error', () => undefined);
          socket.once('close', () => resolve(true));
          socket.once('end', () => {
            const poke = setInterval(() => socket.write('x'), 200);
            socket.once('close', () => clearInterval(poke));
          });
          socket.resume();
          socket.write(requestText);
        }),
    ),
  );
  return closed.filter(Boolean).length;
}

beforeAll(async () => {
  sys = await startSuiteSystem({
    namespaces: [nsA, nsB],
    local: {
      nodes: 1,
      speed: 0.02,
      publishInterval: '1s',
      extraArgs: {
        'sandbox-apiserver': [
          `--max-streams-per-namespace=${MAX_STREAMS_PER_NAMESPACE}`,
          `--router-max-relays-per-namespace=${ROUTER_MAX_RELAYS_PER_NAMESPACE}`,
        ],
      },
    },
  });
  routerUrl = await sys.routerUrl();
  for (let i = 0; i < TENANTS; i++) {
    const t = await sys.tenant(nsA, `agent-${i}`);
    await grantEditRole(sys.kubeConfig, nsA, `agent-${i}`);
    tenantsA.push(t);
  }
  tenantB = await sys.tenant(nsB, 'agent');
  await grantEditRole(sys.kubeConfig, nsB, 'agent');
  await applyWarmPool(sys, nsA, { image: 'ghcr.io/example/streams-a:1.0', replicas: 1 });
  await applyWarmPool(sys, nsB, { image: 'ghcr.io/example/streams-b:1.0', replicas: 1 });
  await claimReady(sys, nsA, 'loud');
  await claimReady(sys, nsB, 'quiet');
  // kube-controller-manager folds the chart's roles into edit a moment after they exist
  await eventually(
    async () => {
      const r = await kubeRaw(tenantB.kubeConfig, {
        method: 'POST',
        path: `${base(nsB, 'quiet')}/exec`,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ argv: ['true'] }),
      });
      expect(r.status).toBe(200);
    },
    { timeoutMs: 60_000, intervalMs: 500 },
  );
}, 300_000);

afterAll(async () => {
  for (const h of held) h.destroy();
  await sys?.stop();
}, 60_000);

describe('long requests are shared fairly', () => {
  it("refuses one namespace past its share of streams and relays while another namespace's are all served", async () => {
    const dispatcher = new Agent({ connect: { ca: sys.servingCa, servername: sys.servernameOf(sys.apiserverUrl) } });
    const token = await sys.metricsReaderToken();
    const streams = (): Promise<number> =>
      gaugeSum(dispatcher, token, 'sandbox_scale_apiserver_long_running_in_flight', { kind: 'stream' });
    const relays = (): Promise<number> => gaugeSum(dispatcher, token, 'sandbox_scale_apiserver_router_relays_in_flight');
    const answers = { portforward: new Map<string, number>(), exec: new Map<string, number>(), router: new Map<string, number>() };
    const count = (kind: keyof typeof answers, a: number | string): void => {
      answers[kind].set(String(a), (answers[kind].get(String(a)) ?? 0) + 1);
    };
    let streamRefused = false;
    let routerRefused = false;
    for (let i = 0; (!streamRefused || !routerRefused) && i < 400; i++) {
      const t = tenantsA[i % TENANTS];
      if (t === undefined) throw new Error('no tenant');
      const kind = (['portforward', 'exec', 'router'] as const)[i % 3] ?? 'exec';
      if (kind === 'portforward') {
        const o = await kubeUpgrade(t.kubeConfig, 'POST', `${base(nsA, 'loud')}/portforward?port=8888`);
        if (o.upgraded) held.push(o.socket);
        count(kind, o.upgraded ? 'held' : o.reply.status);
        if (!o.upgraded) streamRefused ||= o.reply.status === 429;
      } else if (kind === 'exec') {
        const before = await streams();
        const req = await execRequest(t.kubeConfig, `${base(nsA, 'loud')}/exec`);
        held.push(req);
        const a = await heldOrRefused(
          req,
          JSON.stringify({ argv: ['sleep', '170'], timeoutSeconds: 170 }),
          async () => (await streams()) > before,
        );
        count(kind, a);
        streamRefused ||= a === 429;
      } else {
        const before = await relays();
        const req = routerRequest(t.token, nsA, 'loud', '/execute');
        held.push(req);
        const a = await heldOrRefused(
          req,
          JSON.stringify({ command: 'sleep 170', timeout_seconds: 170 }),
          async () => (await relays()) > before,
        );
        count(kind, a);
        routerRefused ||= a === 429;
      }
    }

    // tenant B meanwhile: an exec, a port-forward and a router call, each served
    const exec = await kubeRaw(tenantB.kubeConfig, {
      method: 'POST',
      path: `${base(nsB, 'quiet')}/exec`,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ argv: ['echo', 'quiet'] }),
    });
    const forward = await kubeUpgrade(tenantB.kubeConfig, 'POST', `${base(nsB, 'quiet')}/portforward?port=8888`);
    if (!forward.upgraded) throw new Error(`tenant B's port-forward: ${forward.reply.status} ${forward.reply.body.toString()}`);
    const overForward = (await exchange(forward.socket, 'GET / HTTP/1.1\r\nHost: guest\r\nConnection: close\r\n\r\n')).toString();
    const toRouter = routerAgent(sys, routerUrl);
    const routed = await fetch(`${routerUrl}/`, {
      dispatcher: toRouter,
      headers: { authorization: `Bearer ${tenantB.token}`, 'x-sandbox-id': 'quiet', 'x-sandbox-namespace': nsB, 'x-sandbox-port': '8888' },
    });
    const summary = Object.fromEntries(Object.entries(answers).map(([k, m]) => [k, Object.fromEntries(m)]));
    process.stdout.write(
      `[fair-share] ${sys.target}: tenant A through ${TENANTS} ServiceAccounts ${JSON.stringify(summary)}; ` +
        `tenant B exec ${exec.status}, port-forward 101 then ${overForward.split('\r\n')[0] ?? ''}, router ${routed.status}\n`,
    );
    expect({ streamRefused, routerRefused }).toEqual({ streamRefused: true, routerRefused: true });
    // A was refused only by its shares: never a 5xx, never another code
    for (const m of Object.values(answers)) expect([...m.keys()].filter((k) => k !== 'held' && k !== '429')).toEqual([]);
    expect({ status: exec.status, stdout: jsonOf<{ stdout: string }>(exec).stdout }).toEqual({ status: 200, stdout: 'quiet\n' });
    expect(overForward).toMatch(/^HTTP\/1\.[01] 200/);
    expect(routed.status).toBe(200);
    await dispatcher.close();
    await toRouter.close();
  }, 600_000);

  it('refuses an exec asking for more than the longest exec with 400 naming timeoutSeconds', async () => {
    const r = await kubeRaw(tenantB.kubeConfig, {
      method: 'POST',
      path: `${base(nsB, 'quiet')}/exec`,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ argv: ['true'], timeoutSeconds: 24 * 3600 }),
    });
    expect({ status: r.status, message: jsonOf<{ message: string }>(r).message }).toEqual({
      status: 400,
      message: expect.stringContaining('timeoutSeconds: 86400 is more than') as unknown,
    });
  });

  it('closes every upgrade of a client that never authenticates, though it never closes its side', async () => {
    const router = new URL(routerUrl);
    const upgrade = 'GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nX-Sandbox-ID: loud\r\n\r\n';
    const api = new URL(sys.apiserverUrl);
    const apiUpgrade = `POST ${base(nsA, 'loud')}/portforward?port=8888 HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n`;
    // both serve TLS; the client checks nothing (it never gets as far as sending a credential)
    const opener = (u: URL) => (): Socket =>
      tlsConnect({ socket: connect({ host: u.hostname, port: Number(u.port), allowHalfOpen: true }), rejectUnauthorized: false });
    const [toRouter, toApi] = await Promise.all([flood(opener(router), FLOOD, upgrade), flood(opener(api), FLOOD, apiUpgrade)]);
    process.stdout.write(
      `[fair-share] ${sys.target}: of ${FLOOD} unauthenticated upgrades each, closed by the router ${toRouter}, by sandbox-apiserver ${toApi}\n`,
    );
    expect({ toRouter, toApi }).toEqual({ toRouter: FLOOD, toApi: FLOOD });
  }, 300_000);
});
