import { request as httpsRequest } from 'node:https';
import { grantEditRole } from '../src/testing/tenant-role';
import { eventually, runSuffix } from '../src/index';
import { MAX_WATCHES_PER_NAMESPACE, MAX_WATCHES_PER_USER, SANDBOX_APISERVER_ARGS } from '../src/installed/installed-values';
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
});
