import { Agent, request } from 'node:https';
import { readFileSync } from 'node:fs';
import { CoreV1Api } from '@kubernetes/client-node';
import { eventually, runSuffix } from '../src/index';
import { kubeconfigForServiceAccount } from '../src/testing/cluster';
import { startLocalSystem, type LocalSystem, type SimNode } from '../src/system/local-system';
import { itWhere } from '../src/system/suite-system';
import { e2eTarget } from '../src/system/system-under-test';
import { replicaClient, serveWarmPool } from '../src/testing/replica-client';
import { grantTenantRole } from '../src/testing/tenant-role';
import { sandboxdRow } from '../src/testing/sandboxd';

// sandbox-apiserver as the chart deploys it (2 replicas under the chart's ServiceAccount), with
// nodes that publish their inventory only every 20 s: what one replica lists, watches, renews
// and finds of snapshots must not wait for that publish to agree with the other replica.

const ns = `views-${runSuffix()}`;
const POOL = 'agent';
const POOL_REPLICAS = 24;
const IMAGE = 'ghcr.io/example/views-agent:1.0';
const API_LEASE_S = 4;

// Each replica is called at its own address, with start-time flags the shared install cannot have.
const LOCAL_ONLY = e2eTarget() !== 'installed';
const itLocal = itWhere(
  LOCAL_ONLY,
  'needs 2 sandboxd nodes, 20 s publishes, 4 s apiserver leases and each replica reached at its own address; the installed chart has one node and its values for every suite',
);

let sys: LocalSystem;
let token = '';
let agent: Agent;

interface Body {
  metadata?: { name?: string; resourceVersion?: string; annotations?: Record<string, string> };
  status?: { nodeName?: string };
  items?: Body[];
  reason?: string;
  message?: string;
  snapshotID?: string;
}

const api = replicaClient<Body>({ namespace: ns, image: IMAGE, agent: () => agent, token: () => token });
const { sandboxes, call, create } = api;

/** A watch on one replica from `resourceVersion`, collecting `TYPE name` per event until stopped. */
function watch(base: string, resourceVersion: string): { events: string[]; stop: () => void } {
  const events: string[] = [];
  let buf = '';
  const req = request(
    `${base}${sandboxes}?watch=1&resourceVersion=${resourceVersion}`,
    { method: 'GET', agent, headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' } },
    (res) => {
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        buf += c;
        for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          if (line === '') continue;
          const ev = JSON.parse(line) as { type: string; object: Body };
          events.push(`${ev.type} ${ev.object.metadata?.name ?? ''}`);
        }
      });
      res.on('error', () => undefined);
    },
  );
  req.on('error', () => undefined);
  req.end();
  return { events, stop: () => req.destroy() };
}

const names = async (base: string): Promise<string[]> =>
  ((await call(base, 'GET', sandboxes)).body.items ?? []).map((i) => i.metadata?.name ?? '');

const nodeRow = (node: SimNode, id: string): Promise<{ id: string; deadline?: string } | undefined> => sandboxdRow(node, id);

beforeAll(async () => {
  if (!LOCAL_ONLY) return;
  sys = await startLocalSystem({
    nodes: 2,
    speed: 0,
    examples: false,
    publishInterval: '20s',
    apiserverReplicas: 2,
    extraArgs: { 'sandbox-apiserver': ['--sandbox-lease-ttl', `${API_LEASE_S}s`] },
    beforeInstall: async (kc) => {
      await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: ns } } });
    },
  });
  agent = new Agent({ keepAlive: true, maxSockets: 32, ca: readFileSync(sys.servingCaPath, 'utf8') });
  const subresources = ['snapshot', 'snapshots', 'claimsnapshot', 'deletesnapshot'].map((s) => `sandboxes/${s}`);
  await grantTenantRole(sys.kubeConfig, ns, 'user', [
    { apiGroups: ['agents.x-k8s.io'], resources: ['sandboxes', ...subresources], verbs: ['create', 'get', 'list', 'watch', 'delete'] },
  ]);
  token = (await kubeconfigForServiceAccount(sys.kubeConfig, ns, 'user')).getCurrentUser()?.token ?? '';
  await serveWarmPool(sys, api, { name: POOL, image: IMAGE, replicas: POOL_REPLICAS }, 180_000);
}, 400_000);

afterAll(async () => {
  agent?.destroy();
  await sys?.stop();
});

describe('two sandbox-apiserver replicas list, watch, renew and find snapshots alike between publishes', () => {
  itLocal(
    'lists on one replica at once what was created or deleted through the other, and each watch sees every create and delete once',
    async () => {
      const [a, b] = sys.apiserverUrls as [string, string];
      const watches = [a, b].map((url) => ({ url, rv: '' }));
      for (const w of watches) w.rv = (await call(w.url, 'GET', sandboxes)).body.metadata?.resourceVersion ?? '';
      const [wa, wb] = watches.map((w) => watch(w.url, w.rv)) as [ReturnType<typeof watch>, ReturnType<typeof watch>];
      const made = Array.from({ length: 20 }, (_, i) => `lv-${i}`);
      const counts = { created: 0, listed_on_other_at_once: 0, deleted: 0, gone_on_other_at_once: 0 };
      const misses: string[] = [];
      for (const [i, name] of made.entries()) {
        const [via, other] = i % 2 === 0 ? [a, b] : [b, a];
        const c = await create(via, name);
        if (c.code !== 201) {
          misses.push(`${name} create ${c.code} ${c.body.message ?? ''}`);
          continue;
        }
        counts.created++;
        if ((await names(other)).includes(name)) counts.listed_on_other_at_once++;
        else misses.push(`${name} not listed on the other replica`);
      }
      for (const [i, name] of made.entries()) {
        const [via, other] = i % 2 === 0 ? [b, a] : [a, b];
        const d = await call(via, 'DELETE', `${sandboxes}/${name}`);
        if (d.code !== 200) {
          misses.push(`${name} delete ${d.code} ${d.body.message ?? ''}`);
          continue;
        }
        counts.deleted++;
        if (!(await names(other)).includes(name)) counts.gone_on_other_at_once++;
        else misses.push(`${name} still listed on the other replica`);
      }
      // every watch has seen each create and each delete, exactly once
      const tally = (events: string[], type: string): number =>
        made.filter((n) => events.filter((e) => e === `${type} ${n}`).length === 1).length;
      await eventually(
        async () => {
          for (const w of [wa, wb])
            if (tally(w.events, 'ADDED') < made.length || tally(w.events, 'DELETED') < made.length)
              throw new Error(`watch has ${w.events.length} events`);
        },
        { timeoutMs: 30_000, intervalMs: 250 },
      );
      wa.stop();
      wb.stop();
      const figures = {
        ...counts,
        watch_a_added: tally(wa.events, 'ADDED'),
        watch_a_deleted: tally(wa.events, 'DELETED'),
        watch_b_added: tally(wb.events, 'ADDED'),
        watch_b_deleted: tally(wb.events, 'DELETED'),
      };
      console.log(JSON.stringify({ test: 'lists-across-replicas', ...figures, misses: misses.length }));
      expect(misses.slice(0, 5)).toEqual([]);
      expect(figures).toEqual({
        created: 20,
        listed_on_other_at_once: 20,
        deleted: 20,
        gone_on_other_at_once: 20,
        watch_a_added: 20,
        watch_a_deleted: 20,
        watch_b_added: 20,
        watch_b_deleted: 20,
      });
    },
    300_000,
  );

  itLocal(
    'lists, claims and deletes through one replica the snapshot of a sandbox taken and deleted through the other',
    async () => {
      const [a, b] = sys.apiserverUrls as [string, string];
      expect((await create(a, 'snap-src')).code).toBe(201);
      const made = await call(a, 'POST', `${sandboxes}/snap-src/snapshot`, { name: 'keep' });
      expect(made.code).toBe(201);
      const id = made.body.snapshotID ?? '';
      expect(id).toMatch(/^ck_/);
      expect((await call(b, 'DELETE', `${sandboxes}/snap-src`)).code).toBe(200);
      expect((await call(a, 'GET', `${sandboxes}/snap-src`)).code).toBe(404);
      for (const url of [a, b]) {
        const listed = await call(url, 'POST', `${sandboxes}/snap-src/snapshots`, {});
        expect(listed.code).toBe(201);
        expect(
          (listed.body.items as unknown as { snapshotID: string; name?: string }[]).map((i) => `${i.snapshotID} ${i.name ?? ''}`),
        ).toEqual([`${id} keep`]);
      }
      const claimed = await call(b, 'POST', `${sandboxes}/snap-src/claimsnapshot`, { snapshot: id, name: 'snap-branch' });
      expect(claimed.code).toBe(201);
      expect(claimed.body.metadata?.annotations?.['sandbox.cocoonstack.io/token']).toBeTruthy();
      // the new sandbox is found and listed through the other replica at once, without its token
      const got = await call(a, 'GET', `${sandboxes}/snap-branch`);
      expect(got.code).toBe(200);
      expect(got.body.metadata?.annotations?.['sandbox.cocoonstack.io/token']).toBeUndefined();
      expect(await names(a)).toContain('snap-branch');
      expect((await call(a, 'POST', `${sandboxes}/snap-src/claimsnapshot`, { snapshot: id, name: 'snap-branch' })).code).toBe(409);
      expect((await call(a, 'POST', `${sandboxes}/snap-src/deletesnapshot`, { snapshot: id })).code).toBe(201);
      expect((await call(b, 'POST', `${sandboxes}/snap-src/snapshots`, {})).code).toBe(404);
      expect((await call(b, 'DELETE', `${sandboxes}/snap-branch`)).code).toBe(200);
    },
    120_000,
  );

  itLocal(
    'keeps alive over several leases the sandboxes created through either replica, each renewed by one of them',
    async () => {
      const [a, b] = sys.apiserverUrls as [string, string];
      const made: { name: string; id: string; node: SimNode }[] = [];
      for (let i = 0; i < 6; i++) {
        const c = await create(i % 2 === 0 ? a : b, `lease-${i}`);
        expect(c.code).toBe(201);
        const node = sys.nodes.find((n) => n.name === c.body.status?.nodeName);
        expect(node).toBeDefined();
        made.push({
          name: `lease-${i}`,
          id: c.body.metadata?.annotations?.['sandbox.cocoonstack.io/claim-id'] ?? '',
          node: node as SimNode,
        });
      }
      const deadlines = new Map(made.map((m) => [m.id, new Set<string>()]));
      // each sandbox's node lease is renewed (a new deadline) at least 4 times: 4 leases outlived
      await eventually(
        async () => {
          for (const m of made) {
            const row = await nodeRow(m.node, m.id);
            if (row === undefined) throw new Error(`${m.name} gone`);
            if (row.deadline) deadlines.get(m.id)?.add(row.deadline);
          }
          const fewest = Math.min(...[...deadlines.values()].map((d) => d.size));
          if (fewest < 5) throw new Error(`fewest distinct deadlines ${fewest}`);
        },
        { timeoutMs: 90_000, intervalMs: 250, retryOn: (err) => !(err as Error).message.endsWith('gone') },
      );
      const alive = (await Promise.all(made.map((m) => nodeRow(m.node, m.id)))).filter((r) => r !== undefined).length;
      const fewest = Math.min(...[...deadlines.values()].map((d) => d.size));
      console.log(
        JSON.stringify({
          test: 'lease-across-replicas',
          lease_s: API_LEASE_S,
          sandboxes: made.length,
          alive,
          fewest_distinct_deadlines: fewest,
        }),
      );
      expect(alive).toBe(6);
      expect(fewest).toBeGreaterThanOrEqual(5);
      for (const m of made) expect((await call(a, 'DELETE', `${sandboxes}/${m.name}`)).code).toBe(200);
    },
    150_000,
  );
});
