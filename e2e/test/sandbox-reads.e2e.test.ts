import { Agent, request } from 'node:https';
import { RbacAuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { eventually, kubectl, kubectlOk, runSuffix } from '../src/index';
import { applyWarmPool, startSuiteSystem } from '../src/system/suite-system';
import type { SystemUnderTest, TenantCredentials } from '../src/system/system-under-test';
import { jsonOf, kubeRaw, type RawReply, type RawRequest } from '../src/testing/data-plane-requests';
import { grantEditRole } from '../src/testing/tenant-role';

// A sandbox's stats and its snapshot list are reads: GET (RBAC verb get), which the chart's view
// role grants, beside the POST (create) that older clients send. Driven through kube-apiserver's
// aggregator by tenants holding the chart's view and edit roles, another namespace's editor and
// kubectl, and straight at every sandbox-apiserver replica.

const ns = `reads-${runSuffix()}`;
const otherNs = `readso-${runSuffix()}`;
const G = 'agents.x-k8s.io';
const V = `/apis/${G}/v1beta1`;
const base = (name: string, namespace = ns): string => `${V}/namespaces/${namespace}/sandboxes/${name}`;

let sys: SystemUnderTest;
let editor: KubeConfig;
/** The editor's kubeconfig file, for kubectl. */
let editorPath = '';
let viewer: TenantCredentials;
let outsider: KubeConfig;
/** The checkpoint the editor took of sandbox `a`. */
let snapshotID = '';

interface Status {
  kind: string;
  code: number;
  reason: string;
  message: string;
}
interface Stats {
  apiVersion: string;
  kind: string;
  cpuCount: number;
  memTotalBytes: number;
  memUsedBytes: number;
  memUsedMeasured: boolean;
  paused: boolean;
  measuredAt: string | null;
  nodeName: string;
}
interface SnapshotList {
  apiVersion: string;
  kind: string;
  items: {
    snapshotID: string;
    name?: string;
    sandboxID: string;
    nodeName: string;
    pool: Record<string, string>;
    creationTimestamp: string;
  }[];
}

/** A request through kube-apiserver; a body is sent whole with its Content-Length, also on a GET. */
function call(kc: KubeConfig, method: RawRequest['method'], path: string, body?: unknown): Promise<RawReply> {
  if (body === undefined) return kubeRaw(kc, { method, path });
  const text = JSON.stringify(body);
  return kubeRaw(kc, {
    method,
    path,
    headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) },
    body: text,
  });
}

/** status and the JSON body of a reply, compared in one assertion so a failure shows both. */
const answer = <T>(r: RawReply): { status: number; body: T } => ({ status: r.status, body: jsonOf<T>(r) });

const withoutTime = ({ measuredAt: _m, ...rest }: Stats): Omit<Stats, 'measuredAt'> => rest;

async function bind(namespace: string, sa: string, clusterRole: string): Promise<void> {
  await sys.kubeConfig.makeApiClient(RbacAuthorizationV1Api).createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: `${sa}-${clusterRole}` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterRole },
      subjects: [{ kind: 'ServiceAccount', name: sa, namespace }],
    },
  });
}

/** A GET straight to one sandbox-apiserver replica with a tenant's bearer token. */
function getFrom(agent: Agent, url: string, path: string, token: string): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}${path}`,
      {
        method: 'GET',
        agent,
        servername: sys.servernameOf(url),
        headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const stats = async (kc: KubeConfig, name = 'a'): Promise<Stats> => {
  const r = answer<Stats>(await call(kc, 'GET', `${base(name)}/stats`));
  expect(r.status).toBe(200);
  return r.body;
};

beforeAll(async () => {
  sys = await startSuiteSystem({
    namespaces: [ns, otherNs],
    local: { nodes: 1, speed: 0.02, publishInterval: '1s', apiserverReplicas: 2 },
  });
  const e = await sys.tenant(ns, 'editor');
  editor = e.kubeConfig;
  editorPath = e.path;
  await grantEditRole(sys.kubeConfig, ns, 'editor');
  viewer = await sys.tenant(ns, 'viewer');
  await bind(ns, 'viewer', 'view');
  outsider = (await sys.tenant(otherNs, 'outsider')).kubeConfig;
  await grantEditRole(sys.kubeConfig, otherNs, 'outsider');
  await applyWarmPool(sys, ns, { image: 'ghcr.io/example/reads-agent:1.0', replicas: 2 });
  await kubectlOk(['apply', '-f', '-'], {
    kubeconfig: sys.kubeconfigPath,
    input: JSON.stringify({
      apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
      kind: 'SandboxClaim',
      metadata: { name: 'a', namespace: ns },
      spec: { warmPoolRef: { name: 'agent' } },
    }),
  });
  await kubectlOk(['-n', ns, 'wait', '--for=condition=Ready', 'sandboxclaim/a', '--timeout=120s'], { kubeconfig: sys.kubeconfigPath });
  // kube-controller-manager folds the chart's roles into edit and view a moment after they exist
  await eventually(
    async () => {
      expect((await call(editor, 'POST', `${base('a')}/stats`, {})).status).toBe(201);
      expect((await call(viewer.kubeConfig, 'GET', `${base('a')}/stats`)).status).toBe(200);
    },
    { timeoutMs: 60_000, intervalMs: 500 },
  );
  const taken = answer<{ kind: string; snapshotID: string }>(
    await call(editor, 'POST', `${base('a')}/snapshot`, { kind: 'SandboxSnapshotOptions', name: 'r1' }),
  );
  expect(taken).toMatchObject({ status: 201, body: { kind: 'SandboxSnapshotResult', snapshotID: expect.any(String) } });
  snapshotID = taken.body.snapshotID;
}, 300_000);

afterAll(async () => {
  await sys?.stop();
}, 60_000);

describe('stats and snapshots as GET', () => {
  it("lets a view tenant GET a sandbox's stats: 200, with the body an editor's POST gets (201)", async () => {
    const got = answer<Stats>(await call(viewer.kubeConfig, 'GET', `${base('a')}/stats`));
    expect(got).toEqual({
      status: 200,
      body: {
        apiVersion: `${G}/v1beta1`,
        kind: 'SandboxStats',
        cpuCount: expect.any(Number),
        memTotalBytes: expect.any(Number),
        memUsedBytes: expect.any(Number),
        memUsedMeasured: true,
        paused: false,
        measuredAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
        nodeName: expect.stringMatching(/.+/),
      },
    });
    expect(got.body.cpuCount).toBeGreaterThan(0);
    expect(got.body.memUsedBytes).toBeGreaterThan(0);
    expect(got.body.memUsedBytes).toBeLessThanOrEqual(got.body.memTotalBytes);
    const posted = answer<Stats>(await call(editor, 'POST', `${base('a')}/stats`, {}));
    expect(posted.status).toBe(201);
    // the same reading but for its time, which moves between the two calls
    expect(withoutTime(posted.body)).toEqual(withoutTime(got.body));
  });

  it("lets a view tenant GET a sandbox's snapshots: 200, the checkpoint the editor took, the body an editor's POST gets", async () => {
    const got = answer<SnapshotList>(await call(viewer.kubeConfig, 'GET', `${base('a')}/snapshots`));
    expect(got).toMatchObject({ status: 200, body: { apiVersion: `${G}/v1beta1`, kind: 'SandboxSnapshotList' } });
    expect(got.body.items).toEqual([
      {
        snapshotID,
        name: 'r1',
        sandboxID: expect.stringMatching(/.+/),
        nodeName: (await stats(viewer.kubeConfig)).nodeName,
        pool: { template: expect.any(String), net: expect.any(String), size: expect.any(String) },
        creationTimestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
      },
    ]);
    const posted = answer<SnapshotList>(await call(editor, 'POST', `${base('a')}/snapshots`, { kind: 'SandboxSnapshotsOptions' }));
    expect(posted).toEqual({ status: 201, body: got.body });
  });

  it('answers kubectl get --raw for both, as a view tenant', async () => {
    const k = async (path: string): Promise<unknown> =>
      JSON.parse((await kubectlOk(['get', '--raw', path], { kubeconfig: viewer.path })).stdout) as unknown;
    const s = (await k(`${base('a')}/stats`)) as Stats;
    expect(s).toMatchObject({ kind: 'SandboxStats', paused: false, nodeName: (await stats(editor)).nodeName });
    const list = (await k(`${base('a')}/snapshots`)) as SnapshotList;
    expect({ kind: list.kind, ids: list.items.map((i) => i.snapshotID) }).toEqual({ kind: 'SandboxSnapshotList', ids: [snapshotID] });
    // kubectl's POST (create --raw) still works for an editor, and is refused to the viewer
    const created = await kubectl(['create', '--raw', `${base('a')}/stats`, '-f', '-'], { kubeconfig: editorPath, input: '{}' });
    expect({ code: created.code, kind: (JSON.parse(created.stdout || '{}') as { kind?: string }).kind }).toEqual({
      code: 0,
      kind: 'SandboxStats',
    });
    const refused = await kubectl(['create', '--raw', `${base('a')}/stats`, '-f', '-'], { kubeconfig: viewer.path, input: '{}' });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/Forbidden/);
  });

  it('refuses the view tenant every POST, and any GET that is not a read; another namespace gets 403 on both', async () => {
    for (const sub of ['stats', 'snapshots', 'pause']) {
      const r = answer<Status>(await call(viewer.kubeConfig, 'POST', `${base('a')}/${sub}`, {}));
      expect({ status: r.status, kind: r.body.kind, reason: r.body.reason }).toEqual({ status: 403, kind: 'Status', reason: 'Forbidden' });
      expect(r.body.message).toContain(`sandboxes/${sub}`);
      expect(r.body.message).toContain('create');
    }
    // view grants get on the reads only, not on the actions that act
    const pause = answer<Status>(await call(viewer.kubeConfig, 'GET', `${base('a')}/pause`));
    expect({ status: pause.status, reason: pause.body.reason }).toEqual({ status: 403, reason: 'Forbidden' });
    for (const sub of ['stats', 'snapshots'])
      for (const method of ['GET', 'POST'] as const) {
        const r = answer<Status>(await call(outsider, method, `${base('a')}/${sub}`, method === 'POST' ? {} : undefined));
        expect({ sub, method, status: r.status, reason: r.body.reason }).toEqual({ sub, method, status: 403, reason: 'Forbidden' });
      }
    // the outsider's own namespace answers (it holds edit there): 404, no such sandbox
    const own = answer<Status>(await call(outsider, 'GET', `${base('a', otherNs)}/stats`));
    expect({ status: own.status, reason: own.body.reason }).toEqual({ status: 404, reason: 'NotFound' });
  });

  it('changes nothing on a GET with a body or unknown query parameters; POST still acts', async () => {
    const admin = sys.kubeConfig;
    // a GET of stats carrying pause's options and a dry run is a read: the sandbox keeps running
    const s = answer<Stats>(
      await call(admin, 'GET', `${base('a')}/stats?dryRun=All&count=3&action=pause`, { kind: 'SandboxPauseOptions' }),
    );
    expect({ status: s.status, paused: s.body.paused }).toEqual({ status: 200, paused: false });
    // a GET of snapshots carrying a delete's options lists, and deletes nothing
    const listed = answer<SnapshotList>(
      await call(admin, 'GET', `${base('a')}/snapshots?snapshot=${snapshotID}&dryRun=All`, {
        kind: 'SandboxDeleteSnapshotOptions',
        snapshot: snapshotID,
      }),
    );
    expect({ status: listed.status, ids: listed.body.items.map((i) => i.snapshotID) }).toEqual({ status: 200, ids: [snapshotID] });
    // a GET of an action that acts is 405 (the admin passes kube-apiserver's check) and does nothing
    for (const [sub, body] of [
      ['deletesnapshot', { snapshot: snapshotID }],
      ['pause', {}],
    ] as const) {
      const r = answer<Status>(await call(admin, 'GET', `${base('a')}/${sub}?snapshot=${snapshotID}`, body));
      expect({ sub, status: r.status, reason: r.body.reason }).toEqual({ sub, status: 405, reason: 'MethodNotAllowed' });
    }
    const after = answer<SnapshotList>(await call(viewer.kubeConfig, 'GET', `${base('a')}/snapshots`));
    expect(after.body.items.map((i) => i.snapshotID)).toEqual([snapshotID]);
    expect((await stats(viewer.kubeConfig)).paused).toBe(false);
    // the check above can fail: a POST pause is seen by the next GET, and resume undoes it
    expect((await call(editor, 'POST', `${base('a')}/pause`, {})).status).toBe(201);
    expect((await stats(viewer.kubeConfig)).paused).toBe(true);
    expect((await call(editor, 'POST', `${base('a')}/resume`, {})).status).toBe(201);
    expect((await stats(viewer.kubeConfig)).paused).toBe(false);
  });

  it('is answered by every sandbox-apiserver replica, the same reading from each', async () => {
    const agent = new Agent({ keepAlive: false, ca: sys.servingCa });
    try {
      expect(sys.apiserverUrls.length).toBeGreaterThanOrEqual(2);
      const nodes: string[] = [];
      for (const url of sys.apiserverUrls) {
        const r = await getFrom(agent, url, `${base('a')}/stats`, viewer.token);
        expect(r).toMatchObject({ status: 200, body: { kind: 'SandboxStats', paused: false } });
        nodes.push((r.body as Stats).nodeName);
        const list = await getFrom(agent, url, `${base('a')}/snapshots`, viewer.token);
        expect({ status: list.status, ids: (list.body as SnapshotList).items.map((i) => i.snapshotID) }).toEqual({
          status: 200,
          ids: [snapshotID],
        });
      }
      expect(new Set(nodes).size).toBe(1);
    } finally {
      agent.destroy();
    }
  });
});

describe('discovery and OpenAPI', () => {
  type Resources = { resources: { name: string; verbs: string[] }[] };
  type Discovery = {
    items: {
      metadata: { name: string };
      versions: { version: string; resources: { resource: string; subresources?: { subresource: string; verbs: string[] }[] }[] }[];
    }[];
  };

  it('lists get beside create for stats and snapshots, and create alone for the actions that act', async () => {
    const list = answer<Resources>(await call(viewer.kubeConfig, 'GET', V));
    expect(list.status).toBe(200);
    const verbs = Object.fromEntries(list.body.resources.map((r) => [r.name, r.verbs]));
    expect({ stats: verbs['sandboxes/stats'], snapshots: verbs['sandboxes/snapshots'], pause: verbs['sandboxes/pause'] }).toEqual({
      stats: ['create', 'get'],
      snapshots: ['create', 'get'],
      pause: ['create'],
    });
    // aggregated discovery, as kube-apiserver merges it for kubectl and client-go
    const agg = await kubeRaw(viewer.kubeConfig, {
      method: 'GET',
      path: '/apis',
      headers: { accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' },
    });
    expect(agg.status).toBe(200);
    const group = jsonOf<Discovery>(agg).items.find((i) => i.metadata.name === G);
    const subs =
      group?.versions.find((v) => v.version === 'v1beta1')?.resources.find((r) => r.resource === 'sandboxes')?.subresources ?? [];
    const aggVerbs = Object.fromEntries(subs.map((s) => [s.subresource, s.verbs]));
    expect({ stats: aggVerbs['stats'], snapshots: aggVerbs['snapshots'], pause: aggVerbs['pause'] }).toEqual({
      stats: ['create', 'get'],
      snapshots: ['create', 'get'],
      pause: ['create'],
    });
  });

  it('has a get and a post operation for stats and snapshots in the OpenAPI v3 document kube-apiserver serves', async () => {
    type Op = { operationId: string; 'x-kubernetes-action': string; responses: Record<string, unknown> };
    const v3 = answer<{ paths: Record<string, Record<string, Op | undefined>> }>(
      await call(viewer.kubeConfig, 'GET', `/openapi/v3/apis/${G}/v1beta1`),
    );
    expect(v3.status).toBe(200);
    const at = (sub: string) => v3.body.paths[`${V}/namespaces/{namespace}/sandboxes/{name}/${sub}`] ?? {};
    for (const [sub, kind] of [
      ['stats', 'SandboxStats'],
      ['snapshots', 'SandboxSnapshotList'],
    ] as const) {
      const item = at(sub);
      expect({
        get: item.get?.operationId,
        getAction: item.get?.['x-kubernetes-action'],
        getCodes: Object.keys(item.get?.responses ?? {}),
        post: item.post?.operationId,
        postCodes: Object.keys(item.post?.responses ?? {}),
      }).toEqual({ get: `get${kind}`, getAction: 'get', getCodes: ['200'], post: `post${kind}`, postCodes: ['201'] });
    }
    expect({ get: at('pause').get, post: at('pause').post?.operationId }).toEqual({ get: undefined, post: 'postSandboxPauseOptions' });
  });
});
