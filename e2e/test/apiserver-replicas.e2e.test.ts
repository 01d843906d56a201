import { Agent } from 'node:https';
import { OWNER_KINDS, parseOwnerRef } from '@sandbox-scale/scale-core';
import { kubectl, runSuffix } from '../src/index';
import { startSuiteSystem } from '../src/system/suite-system';
import type { SystemUnderTest } from '../src/system/system-under-test';
import { replicaClient, serveWarmPool } from '../src/testing/replica-client';
import { grantTenantRole } from '../src/testing/tenant-role';
import { sandboxdCall, sandboxdRows, type SandboxdNode } from '../src/testing/sandboxd';

// sandbox-apiserver as the chart deploys it: 2 replicas under the chart's ServiceAccount (local
// processes, or the chart's pods when installed, reached at their pod addresses), finding each
// other through the Service's EndpointSlices. A client that talks to one replica and then the
// other must see one server.

const ns = `replicas-${runSuffix()}`;
const POOL = 'agent';
const POOL_REPLICAS = 40;
const IMAGE = 'ghcr.io/example/replicas-agent:1.0';

let sys: SystemUnderTest;
let token = '';
let userKubeconfig = '';
let agent: Agent;

interface Body {
  metadata?: { name?: string; annotations?: Record<string, string>; continue?: string };
  items?: { metadata: { name: string } }[];
  reason?: string;
  message?: string;
}

const api = replicaClient<Body>({
  namespace: ns,
  image: IMAGE,
  agent: () => agent,
  token: () => token,
  servernameOf: (url) => sys.servernameOf(url),
});
const { sandboxes, sandbox, call, create } = api;

const sim = (node: SandboxdNode, path: string, init: { method?: string; body?: unknown } = {}): Promise<Response> =>
  sandboxdCall(node, path, init);

/** VMs claimed on the nodes per Sandbox name of this namespace, from each node's own list (by claim_ref). */
async function vmsByName(): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const node of sys.nodes) {
    for (const r of await sandboxdRows(node)) {
      const o = parseOwnerRef(r.claim_ref);
      if (o?.kind === OWNER_KINDS.sandbox && o.namespace === ns) out.set(o.name, (out.get(o.name) ?? 0) + 1);
    }
  }
  return out;
}

/** Runs fn over items, `width` at a time. */
async function inBatches<T>(items: T[], width: number, fn: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += width) await Promise.all(items.slice(i, i + width).map(fn));
}

beforeAll(async () => {
  sys = await startSuiteSystem({ namespaces: [ns], local: { nodes: 2, speed: 0, publishInterval: '1s', apiserverReplicas: 2 } });
  agent = new Agent({ keepAlive: true, maxSockets: 32, ca: sys.servingCa });
  await grantTenantRole(sys.kubeConfig, ns, 'user', [
    { apiGroups: ['agents.x-k8s.io'], resources: ['sandboxes', 'sandboxes/pause'], verbs: ['create', 'get', 'list', 'delete'] },
  ]);
  const user = await sys.tenant(ns, 'user');
  token = user.token;
  userKubeconfig = user.path;
  await serveWarmPool(sys, api, { name: POOL, image: IMAGE, replicas: POOL_REPLICAS }, 120_000);
}, 300_000);

afterAll(async () => {
  agent?.destroy();
  await sys?.stop();
}, 60_000);

describe('two sandbox-apiserver replicas act as one', () => {
  it('serves get, pause and delete through one replica right after a create through the other', async () => {
    const [a, b] = sys.apiserverUrls as [string, string];
    const misses: string[] = [];
    const counts = { creates: 0, gets: 0, pauses: 0, deletes: 0 };
    await inBatches(
      Array.from({ length: 500 }, (_, i) => i),
      10,
      async (i) => {
        const name = `rt-${i}`;
        const [via, other] = i % 2 === 0 ? [a, b] : [b, a];
        const created = await create(via, name);
        if (created.code !== 201) return void misses.push(`${name} create ${created.code} ${created.body.message ?? ''}`);
        counts.creates++;
        const got = await call(other, 'GET', `${sandboxes}/${name}`);
        if (got.code !== 200) misses.push(`${name} get ${got.code} ${got.body.message ?? ''}`);
        else counts.gets++;
        const paused = await call(other, 'POST', `${sandboxes}/${name}/pause`, {});
        if (paused.code !== 201) misses.push(`${name} pause ${paused.code} ${paused.body.message ?? ''}`);
        else counts.pauses++;
        const deleted = await call(other, 'DELETE', `${sandboxes}/${name}`);
        if (deleted.code !== 200) misses.push(`${name} delete ${deleted.code} ${deleted.body.message ?? ''}`);
        else counts.deletes++;
      },
    );
    const left = [...(await vmsByName()).entries()].filter(([n]) => n.startsWith('rt-')).length;
    console.log(JSON.stringify({ test: 'read-after-create-across-replicas', ...counts, misses: misses.length, vms_left: left }));
    expect(misses.slice(0, 5)).toEqual([]);
    expect(counts).toEqual({ creates: 500, gets: 500, pauses: 500, deletes: 500 });
    expect(left).toBe(0);
  }, 600_000);

  it('pages one list through either replica, each page from the snapshot the first took, and kubectl through the Service', async () => {
    const [a, b] = sys.apiserverUrls as [string, string];
    const made = Array.from({ length: 30 }, (_, i) => `pg-${String(i).padStart(2, '0')}`);
    await inBatches(made, 10, async (name) => {
      const c = await create(made.indexOf(name) % 2 === 0 ? a : b, name);
      expect(c.code).toBe(201);
    });
    const names = (items: Body['items']): string[] => (items ?? []).map((i) => i.metadata.name).filter((n) => n.startsWith('pg-'));
    const whole = names((await call(a, 'GET', sandboxes)).body.items);
    expect(whole).toEqual(made);
    // directly, page after page on alternating replicas, one deleted between pages: the deleted
    // one is still in the list begun before it went
    const paged: string[] = [];
    let cont = '';
    let pages = 0;
    do {
      const via = pages % 2 === 0 ? a : b;
      const page = await call(via, 'GET', `${sandboxes}?limit=4${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`);
      expect(page.code).toBe(200);
      paged.push(...names(page.body.items));
      if (pages === 1) expect((await call(b, 'DELETE', `${sandboxes}/pg-20`)).code).toBe(200);
      cont = page.body.metadata?.continue ?? '';
      pages++;
    } while (cont !== '');
    // through kube-apiserver (installed: the aggregator's connections to the Service spread
    // over both replicas, so the pages of one kubectl land on either), four kubectl at once
    const failures: string[] = [];
    let lists = 0;
    const expected = made.filter((n) => n !== 'pg-20');
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let i = 0; i < 5; i++) {
          const r = await kubectl(['get', 'sandboxes', '-n', ns, '--chunk-size=4', '-o', 'name'], { kubeconfig: userKubeconfig });
          lists++;
          const got = r.stdout
            .split('\n')
            .map((l) => l.replace(/^[^/]*\//, ''))
            .filter((n) => n.startsWith('pg-'));
          if (r.code !== 0) failures.push(r.stderr.trim().slice(0, 200));
          else if (got.join(',') !== expected.join(',')) failures.push(`listed ${got.length} of ${expected.length}`);
        }
      }),
    );
    console.log(
      JSON.stringify({
        test: 'paged-across-replicas',
        pages,
        paged: paged.length,
        kubectl_lists: lists,
        kubectl_failures: failures.length,
      }),
    );
    expect(paged).toEqual(made);
    expect(pages).toBe(8);
    expect(failures.slice(0, 3)).toEqual([]);
    expect(lists).toBe(20);
    for (const name of expected) expect((await call(a, 'DELETE', `${sandboxes}/${name}`)).code).toBe(200);
  }, 300_000);

  it('answers one 201 and one 409 for two concurrent creates of one name through both replicas, and claims one VM', async () => {
    const [a, b] = sys.apiserverUrls as [string, string];
    const names = Array.from({ length: 200 }, (_, i) => `dup-${i}`);
    const outcomes = new Map<string, string>();
    const vms = new Map<string, number>();
    const cleanupFailures: string[] = [];
    // 20 pairs at a time, then counted on the nodes and deleted, so the warm pool never runs dry
    for (let i = 0; i < names.length; i += 20) {
      const batch = names.slice(i, i + 20);
      await Promise.all(
        batch.map(async (name) => {
          const [x, y] = await Promise.all([create(a, name), create(b, name)]);
          outcomes.set(name, [x.code, y.code].sort().join('+'));
        }),
      );
      const onNodes = await vmsByName();
      for (const name of batch) vms.set(name, onNodes.get(name) ?? 0);
      await Promise.all(
        batch.map(async (name) => {
          const d = await call(a, 'DELETE', `${sandboxes}/${name}`);
          if (d.code !== 200) cleanupFailures.push(`delete ${name}: ${d.code} ${d.body.message ?? ''}`);
        }),
      );
    }
    const pairsOk = [...outcomes.values()].filter((o) => o === '201+409').length;
    const oneVm = [...vms.values()].filter((n) => n === 1).length;
    const badPairs = [...outcomes.entries()].filter(([, o]) => o !== '201+409');
    console.log(
      JSON.stringify({
        test: 'concurrent-create-one-name',
        pairs: names.length,
        one_201_one_409: pairsOk,
        exactly_one_vm: oneVm,
        vms_total: [...vms.values()].reduce((s, n) => s + n, 0),
        failed_deletes: cleanupFailures.length,
      }),
    );
    expect(badPairs.slice(0, 5)).toEqual([]);
    expect(pairsOk).toBe(200);
    expect(oneVm).toBe(200);
    expect(cleanupFailures.slice(0, 5)).toEqual([]);
  }, 600_000);

  it('serves the VM a node delivered under a lost claim reply, and leaves no VM behind a failed create', async () => {
    const [a] = sys.apiserverUrls as [string, string];
    try {
      // the node claims the VM, then answers with a reply that does not parse
      for (const n of sys.nodes)
        expect((await sim(n, '/_sim/faults', { method: 'POST', body: { malformed: { claim: 'wrong-shape' } } })).status).toBe(200);
      const adopted = await create(a, 'lost-reply');
      // every node fails every claim with a 500 and claims nothing
      for (const n of sys.nodes)
        expect((await sim(n, '/_sim/faults', { method: 'POST', body: { errorRate: { claim: 1 } } })).status).toBe(200);
      const failed = await call(a, 'POST', sandboxes, sandbox('failed-claim'));
      const onNodes = await vmsByName();
      console.log(
        JSON.stringify({
          test: 'unknown-claim-outcome',
          adopted_code: adopted.code,
          adopted_vms: onNodes.get('lost-reply') ?? 0,
          failed_code: failed.code,
          failed_vms: onNodes.get('failed-claim') ?? 0,
        }),
      );
      expect(adopted.code).toBe(201);
      expect(adopted.body.metadata?.annotations?.['sandbox.cocoonstack.io/claim-id']).toBeTruthy();
      expect(onNodes.get('lost-reply')).toBe(1);
      expect(failed.code).toBeGreaterThanOrEqual(500);
      expect(onNodes.get('failed-claim') ?? 0).toBe(0);
    } finally {
      for (const n of sys.nodes) await sim(n, '/_sim/faults', { method: 'DELETE' });
    }
  }, 120_000);

  it('lets only a replica call the peer endpoint: an end user, a forged user header or no token is refused', async () => {
    const [a] = sys.apiserverUrls as [string, string];
    const peerCall = { op: 'create', namespace: ns, body: sandbox('via-peer-endpoint'), dryRun: false };
    const asUser = await call(a, 'POST', '/internal/peers/v1/call', peerCall);
    const forged = await call(a, 'POST', '/internal/peers/v1/call', peerCall, {
      'X-Remote-User': `system:serviceaccount:sandbox-system:sandbox-scale-sandbox-apiserver`,
      'X-Remote-Group': 'system:masters',
    });
    const anonymous = await call(a, 'POST', '/internal/peers/v1/call', peerCall, {});
    const onNodes = await vmsByName();
    console.log(
      JSON.stringify({
        test: 'peer-endpoint-authn',
        end_user: asUser.code,
        forged_header: forged.code,
        no_token: anonymous.code,
        vms: onNodes.get('via-peer-endpoint') ?? 0,
      }),
    );
    expect(asUser.code).toBe(403);
    expect(forged.code).toBe(401);
    expect(anonymous.code).toBe(401);
    expect(onNodes.get('via-peer-endpoint') ?? 0).toBe(0);
  });
});
