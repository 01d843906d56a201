import { randomBytes } from 'node:crypto';
import { request as httpsRequest } from 'node:https';
import { Pool } from 'undici';
import { grantEditRole } from '../src/testing/tenant-role';
import { eventually, runSuffix } from '../src/index';
import {
  MAX_NODE_FAN_OUTS_PER_NAMESPACE,
  MAX_TOKEN_REVIEWS_IN_FLIGHT,
  MAX_WATCHES_PER_NAMESPACE,
  MAX_WATCHES_PER_USER,
  SANDBOX_APISERVER_ARGS,
} from '../src/installed/installed-values';
import { startSuiteSystem } from '../src/system/suite-system';
import type { SystemUnderTest } from '../src/system/system-under-test';

// What one tenant can hold of a server every tenant shares is bounded, and another tenant is
// served meanwhile: tenants act with the chart's edit role in their own namespace, against one
// sandbox-apiserver replica directly (the caps are per replica).

const suffix = runSuffix();
const busyNs = `tbb-${suffix}`;
const otherNs = `tbo-${suffix}`;
/** ServiceAccounts of the busy namespace: enough to fill its watch cap at the per-user cap each, and one more. */
const BUSY_USERS = Math.ceil(MAX_WATCHES_PER_NAMESPACE / MAX_WATCHES_PER_USER) + 1;

let sys: SystemUnderTest;
const tokens = new Map<string, string>();

interface OpenWatch {
  status: number;
  body: string;
  close: () => void;
}

/** A watch of sandboxes in `namespace` as `user`, held open until closed; resolves with its status line. */
function watch(namespace: string, user: string): Promise<OpenWatch> {
  const u = new URL(sys.apiserverUrl);
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: u.hostname,
        port: u.port,
        path: `/apis/agents.x-k8s.io/v1beta1/namespaces/${namespace}/sandboxes?watch=true&timeoutSeconds=120`,
        headers: { authorization: `Bearer ${tokens.get(`${namespace}/${user}`) ?? ''}` },
        ca: sys.servingCa,
        servername: sys.servernameOf(sys.apiserverUrl),
        agent: false,
      },
      (res) => {
        let body = '';
        if (res.statusCode !== 200) res.on('data', (d: Buffer) => (body += d.toString('utf8')));
        else res.resume();
        const answer = { status: res.statusCode ?? 0, body, close: () => req.destroy() };
        if (res.statusCode === 200) resolve(answer);
        else res.on('end', () => resolve({ ...answer, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  sys = await startSuiteSystem({
    namespaces: [busyNs, otherNs],
    local: { nodes: 1, speed: 0, extraArgs: { 'sandbox-apiserver': SANDBOX_APISERVER_ARGS } },
  });
  const users: [string, string][] = [
    ...Array.from({ length: BUSY_USERS }, (_, i): [string, string] => [busyNs, `sa-${i}`]),
    [otherNs, 'sa-0'],
  ];
  for (const [ns, name] of users) {
    tokens.set(`${ns}/${name}`, (await sys.tenant(ns, name)).token);
    await grantEditRole(sys.kubeConfig, ns, name);
  }
  // RBAC is in force once a watch is served (a refusal is not cached for long)
  for (const [ns, name] of users)
    await eventually(async () => {
      const w = await watch(ns, name);
      w.close();
      if (w.status !== 200) throw new Error(`${ns}/${name} watch answered ${w.status}`);
    });
}, 300_000);

afterAll(async () => {
  await sys?.stop();
}, 120_000);

describe('one tenant cannot starve the others', () => {
  it("caps the watches of one namespace over all its ServiceAccounts, while another namespace's watch is served", async () => {
    const held: OpenWatch[] = [];
    // each ServiceAccount but the last opens watches up to its own cap, until the namespace is full
    for (let i = 0; held.length < MAX_WATCHES_PER_NAMESPACE; i++)
      for (let j = 0; j < MAX_WATCHES_PER_USER && held.length < MAX_WATCHES_PER_NAMESPACE; j++) held.push(await watch(busyNs, `sa-${i}`));
    expect(held.map((w) => w.status)).toEqual(Array.from({ length: MAX_WATCHES_PER_NAMESPACE }, () => 200));
    // a ServiceAccount that holds no watch yet is refused: the namespace is full
    const refused = await watch(busyNs, `sa-${BUSY_USERS - 1}`);
    refused.close();
    expect(refused.status).toBe(429);
    expect(refused.body).toContain(`watches in namespace \\"${busyNs}\\"`);
    // another tenant's watch is served meanwhile
    const other = await watch(otherNs, 'sa-0');
    other.close();
    expect(other.status).toBe(200);
    // one watch of the namespace ends: its slot comes back
    held.shift()?.close();
    const again = await eventually(
      async () => {
        const w = await watch(busyNs, `sa-${BUSY_USERS - 1}`);
        if (w.status !== 200) {
          w.close();
          throw new Error(`watch answered ${w.status}`);
        }
        return w;
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    for (const w of [...held, again]) w.close();
    console.log(
      JSON.stringify({ test: 'namespace-watch-cap', cap: MAX_WATCHES_PER_NAMESPACE, refused: refused.status, other: other.status }),
    );
  }, 120_000);

  it('answers a flood of unknown bearer tokens 429 past its reviews in flight, and serves a caller it knows meanwhile', async () => {
    const path = `/apis/agents.x-k8s.io/v1beta1/namespaces/${otherNs}/sandboxes`;
    const pool = new Pool(new URL(sys.apiserverUrl).origin, {
      connections: 64,
      connect: { ca: sys.servingCa, servername: sys.servernameOf(sys.apiserverUrl) },
    });
    const get = async (token: string): Promise<{ status: number; retryAfter: string; reason: string }> => {
      const r = await pool.request({ path, method: 'GET', headers: { authorization: `Bearer ${token}` } });
      const body = await r.body.text();
      let reason: string;
      try {
        reason = String((JSON.parse(body) as { reason?: unknown }).reason ?? '');
      } catch {
        reason = body;
      }
      return { status: r.statusCode, retryAfter: String(r.headers['retry-after'] ?? ''), reason };
    };
    // a caller this replica has never reviewed, made before the flood so its RoleBinding is in force after it
    const late = (await sys.tenant(otherNs, 'late')).token;
    await grantEditRole(sys.kubeConfig, otherNs, 'late');
    try {
      const known = tokens.get(`${otherNs}/sa-0`) ?? '';
      // the known caller's answer is cached, as it is for any caller in steady use
      await eventually(async () => expect((await get(known)).status).toBe(200));
      const flood = Array.from({ length: 800 }, () => get(randomBytes(24).toString('base64url')));
      const meanwhile = await get(known);
      const answers = await Promise.all(flood);
      const byStatus: Record<string, number> = {};
      for (const a of answers) byStatus[a.status] = (byStatus[a.status] ?? 0) + 1;
      console.log(JSON.stringify({ test: 'review-flood', limit: MAX_TOKEN_REVIEWS_IN_FLIGHT, byStatus, known: meanwhile.status }));
      // nobody is let in, nothing fails: an unknown token is a 401 or, past the bound, a 429 to come back later
      expect(Object.keys(byStatus).sort()).toEqual(['401', '429']);
      expect(answers.find((a) => a.status === 429)).toEqual({ status: 429, retryAfter: '1', reason: 'TooManyRequests' });
      expect(meanwhile.status).toBe(200);
      // the bound is of reviews open, not a ban: once they settle a caller it has not seen is reviewed and served
      await eventually(async () => expect((await get(late)).status).toBe(200), { timeoutMs: 30_000, intervalMs: 200 });
    } finally {
      await pool.close();
    }
  }, 120_000);

  it("answers one namespace's flood of requests that ask every node 429 past its cap, while another namespace is served", async () => {
    // a sandbox's snapshots are read from every node; a name that never was one is a 404 once they have answered
    const snapshotsOf = (namespace: string): string => `/apis/agents.x-k8s.io/v1beta1/namespaces/${namespace}/sandboxes/never/snapshots`;
    const pool = new Pool(new URL(sys.apiserverUrl).origin, {
      connections: 64,
      connect: { ca: sys.servingCa, servername: sys.servernameOf(sys.apiserverUrl) },
    });
    const post = async (namespace: string): Promise<{ status: number; message: string; retryAfter: string }> => {
      const r = await pool.request({
        path: snapshotsOf(namespace),
        method: 'POST',
        headers: { authorization: `Bearer ${tokens.get(`${namespace}/sa-0`) ?? ''}`, 'content-type': 'application/json' },
        body: '{}',
      });
      const body = (await r.body.json()) as { message?: unknown };
      return { status: r.statusCode, message: String(body.message ?? ''), retryAfter: String(r.headers['retry-after'] ?? '') };
    };
    try {
      // both tenants may ask (their reviews cached), and a name that never was a sandbox is a 404
      for (const ns of [busyNs, otherNs]) await eventually(async () => expect((await post(ns)).status).toBe(404));
      const flood = Array.from({ length: 400 }, () => post(busyNs));
      // one at a time, within the other namespace's own cap, while the flood runs
      const others: { status: number }[] = [];
      for (let i = 0; i < 4; i++) others.push(await post(otherNs));
      const answers = await Promise.all(flood);
      const byStatus: Record<string, number> = {};
      for (const a of answers) byStatus[a.status] = (byStatus[a.status] ?? 0) + 1;
      console.log(
        JSON.stringify({ test: 'node-fan-out-flood', cap: MAX_NODE_FAN_OUTS_PER_NAMESPACE, byStatus, other: others.map((o) => o.status) }),
      );
      expect(Object.keys(byStatus).sort()).toEqual(['404', '429']);
      expect(answers.find((a) => a.status === 429)).toEqual({
        status: 429,
        message: `too many requests that ask every node in flight in namespace "${busyNs}" (${MAX_NODE_FAN_OUTS_PER_NAMESPACE}); retry later`,
        retryAfter: '1',
      });
      // the other tenant's requests never wait on the busy one's cap
      expect(others.map((o) => o.status)).toEqual(others.map(() => 404));
      // the cap is of requests in flight: once the flood is over the busy tenant is served again
      expect((await post(busyNs)).status).toBe(404);
    } finally {
      await pool.close();
    }
  }, 120_000);
});
