import { randomBytes } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  applyCrds,
  createCA,
  createLeaf,
  createTestNamespace,
  deleteNamespace,
  eventually,
  freePort,
  kubeconfigForServiceAccount,
  kubeconfigText,
  kubectl,
  runSuffix,
  testBinDir,
  testKubeConfig,
  testKubeconfigPath,
} from '@sandbox-scale/e2e';
import { startSim, type Sim } from '@sandbox-scale/sandboxd-sim';
import { SandboxdClient } from '@sandbox-scale/sandboxd-client';
import { createInformer } from '@sandbox-scale/kube-runtime';
import { EXTENSIONS_API_VERSION, parseObject, parseOwnerRef, OwnerRefKey } from '@sandbox-scale/scale-core';
import { z } from 'zod';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSandboxApiserver, type RunningSandboxApiserver } from '../src';
import { registerApiService } from './aggregator-fixture';
import { direct, publishInventories, quietLog, suiteSelector } from './fleet-fixture';

const TOKEN = 'fleet-secret';
const BASE = '/apis/agents.x-k8s.io/v1beta1';

let kc: KubeConfig;
let ns: string;
let sim: Sim;
let server: RunningSandboxApiserver;
let port: number;
const suffix = runSuffix();
const image = `registry.local/sb-${suffix}:1`;

function sandboxYaml(name: string, template = image, extra = ''): string {
  return `apiVersion: agents.x-k8s.io/v1beta1
kind: Sandbox
metadata:
  name: ${name}
  namespace: ${ns}${extra}
spec:
  podTemplate:
    spec:
      containers:
      - name: main
        image: ${template}
`;
}

let caPem = '';
let certFiles: { cert: string; key: string } | undefined;

/** One serving cert for every start, so the APIService caBundle stays valid across restarts. */
async function servingCertFiles(): Promise<{ cert: string; key: string }> {
  if (certFiles !== undefined) return certFiles;
  const ca = await createCA(`sbapi-ca-${suffix}`);
  const leaf = await createLeaf(ca, {
    commonName: 'sandbox-apiserver',
    dnsNames: [`sandbox-apiserver.${ns}.svc`, 'localhost'],
    ips: ['127.0.0.1'],
    server: true,
  });
  caPem = ca.cert;
  certFiles = { cert: join(tmpdir(), `sbapi-${suffix}.crt`), key: join(tmpdir(), `sbapi-${suffix}.key`) };
  writeFileSync(certFiles.cert, leaf.cert);
  writeFileSync(certFiles.key, leaf.key);
  return certFiles;
}

async function startServer(o: { shutdownDelayMs?: number } = {}): Promise<void> {
  const files = await servingCertFiles();
  server = await startSandboxApiserver({
    claimRefKey: new OwnerRefKey(randomBytes(32)),
    ...o,
    kubeConfig: kc,
    securePort: port,
    bindAddress: '127.0.0.1',
    tlsCertFile: files.cert,
    tlsPrivateKeyFile: files.key,
    fleetToken: TOKEN,
    log: quietLog,
    bookmarkIntervalMs: 1000,
    inventorySelector: suiteSelector(suffix),
  });
  await server.synced;
}

/** A long-running kubectl (get -w) whose output is collected until it is stopped. */
function kubectlWatch(args: string[]): { out: () => string; err: () => string; stop: () => Promise<void> } {
  let out = '';
  let err = '';
  const proc = spawn(join(testBinDir(), 'kubectl'), args, {
    env: { ...process.env, KUBECONFIG: testKubeconfigPath() },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
  proc.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  return {
    out: () => out,
    err: () => err,
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await exited;
    },
  };
}

async function publish(): Promise<void> {
  await publishInventories(kc, sim.nodes, TOKEN, suffix);
}

beforeAll(async () => {
  kc = testKubeConfig();
  await applyCrds(kc, 'charts/sandbox-scale/crds');
  ns = await createTestNamespace(kc, 'sbapi');
  sim = await startSim({ nodes: 2, speed: 0, token: TOKEN, pools: [{ template: image, warm: 6 }] });
  for (const n of sim.nodes) sim.node(n.name).tick();
  await eventually(async () => {
    await publish();
    const out = await kubectl(['get', 'nodeinventories', `${sim.nodes[0]?.name}-${suffix}`, '-o', 'jsonpath={.pools[0].warm}']);
    expect(Number(out.stdout)).toBeGreaterThan(0);
  });
  port = await freePort();
  await startServer();
  await registerApiService({ namespace: ns, port, caPem });
  await eventually(
    async () => {
      const r = await kubectl(['get', '--raw', `${BASE}`]);
      expect(r.stdout).toContain('sandboxes/pause');
    },
    { timeoutMs: 60_000 },
  );
}, 120_000);

afterAll(async () => {
  await kubectl(['delete', 'apiservice', 'v1beta1.agents.x-k8s.io', '--ignore-not-found']);
  await server?.stop();
  await sim?.stop();
  for (const n of sim?.nodes ?? []) await kubectl(['delete', 'nodeinventory', `${n.name}-${suffix}`, '--ignore-not-found']);
  if (ns) await deleteNamespace(kc, ns);
});

describe('sandbox-apiserver through the real kube-apiserver', () => {
  it('is discoverable and explainable', async () => {
    const res = await kubectl(['api-resources', '--api-group=agents.x-k8s.io']);
    expect(res.stdout).toMatch(/sandboxes\s+sandbox\s+agents.x-k8s.io\/v1beta1\s+true\s+Sandbox/);
    // kube-apiserver fetches the aggregated OpenAPI v3 document in the background
    await eventually(
      async () => {
        const explain = await kubectl(['explain', 'sandboxes.spec']);
        expect(explain.stdout + explain.stderr).toContain('podTemplate');
      },
      { timeoutMs: 60_000 },
    );
  });

  it('creates a sandbox with kubectl create -f and pauses it at once', async () => {
    const created = await kubectl(['create', '-f', '-', '-o', 'json'], { input: sandboxYaml('sb-one') });
    expect(created.stderr).toBe('');
    const obj = JSON.parse(created.stdout) as {
      metadata: { annotations: Record<string, string>; uid: string };
      status: { nodeName: string };
    };
    expect(obj.metadata.annotations['sandbox.cocoonstack.io/token']).toBeTruthy();
    expect(obj.status.nodeName).toContain(suffix);
    const paused = await kubectl(['create', '--raw', `${BASE}/namespaces/${ns}/sandboxes/sb-one/pause`, '-f', '-'], { input: '{}' });
    expect(paused.stderr).toBe('');
    expect(paused.stdout).toContain('SandboxPauseOptions');
    const got = await kubectl(['get', 'sandbox', 'sb-one', '-n', ns, '-o', 'yaml']);
    expect(got.stdout).toContain(`uid: ${obj.metadata.uid}`);
    expect(got.stdout).not.toContain('sandbox.cocoonstack.io/token');
    const table = await kubectl(['get', 'sandboxes', '-n', ns]);
    expect(table.stdout).toMatch(/NAME\s+READY\s+REASON\s+NODE\s+AGE/);
    expect(table.stdout).toContain('sb-one');
    const described = await kubectl(['describe', 'sandbox', 'sb-one', '-n', ns]);
    expect(described.stdout).toContain('Node Name:');
    // the node records the owner: a Sandbox created through this API, never a SandboxClaim of the name
    const id = obj.metadata.annotations['sandbox.cocoonstack.io/claim-id'];
    const rows = (await Promise.all(sim.nodes.map((n) => new SandboxdClient({ baseUrl: n.url, token: TOKEN }).sandboxes()))).flat();
    expect(parseOwnerRef(rows.find((r) => r.id === id)?.claimRef)).toMatchObject({
      kind: 'Sandbox',
      namespace: ns,
      name: 'sb-one',
      uid: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
  });

  it('snapshots a sandbox, lists, claims from and deletes its snapshots with kubectl create --raw', async () => {
    await kubectl(['create', '-f', '-'], { input: sandboxYaml('sb-snap') });
    const sub = (action: string) => `${BASE}/namespaces/${ns}/sandboxes/sb-snap/${action}`;
    const raw = async (action: string, body: unknown) =>
      kubectl(['create', '--raw', sub(action), '-f', '-'], { input: JSON.stringify(body) });
    const made = await raw('snapshot', { name: 'after-setup' });
    expect(made.stderr).toBe('');
    const snapshotID = (JSON.parse(made.stdout) as { snapshotID: string }).snapshotID;
    const listed = JSON.parse((await raw('snapshots', {})).stdout) as { kind: string; items: { snapshotID: string; name: string }[] };
    expect(listed.kind).toBe('SandboxSnapshotList');
    expect(listed.items).toEqual([expect.objectContaining({ snapshotID, name: 'after-setup' })]);

    const claimed = await raw('claimsnapshot', {
      kind: 'SandboxClaimSnapshotOptions',
      apiVersion: 'agents.x-k8s.io/v1beta1',
      snapshot: snapshotID,
      name: 'sb-snap-branch',
    });
    expect(claimed.stderr).toBe('');
    expect(
      (JSON.parse(claimed.stdout) as { metadata: { annotations: Record<string, string> } }).metadata.annotations[
        'sandbox.cocoonstack.io/token'
      ],
    ).toBeTruthy();
    // listed at once, without the token, and a lifecycle verb works on it right away
    const got = await kubectl(['get', 'sandbox', 'sb-snap-branch', '-n', ns, '-o', 'yaml']);
    expect(got.stdout).toContain('name: sb-snap-branch');
    expect(got.stdout).not.toContain('sandbox.cocoonstack.io/token');
    expect(
      (await kubectl(['create', '--raw', `${BASE}/namespaces/${ns}/sandboxes/sb-snap-branch/pause`, '-f', '-'], { input: '{}' })).stderr,
    ).toBe('');

    const badBody = await raw('claimsnapshot', { snapshot: snapshotID });
    expect(badBody.code).not.toBe(0);
    expect(badBody.stderr).toContain('name: Required value');
    const taken = await raw('claimsnapshot', { snapshot: snapshotID, name: 'sb-snap-branch' });
    expect(taken.stderr).toContain('already exists');

    expect((await raw('deletesnapshot', { snapshot: snapshotID })).stderr).toBe('');
    expect((JSON.parse((await raw('snapshots', {})).stdout) as { items: unknown[] }).items).toEqual([]);
    const gone = await kubectl(['create', '--raw', sub('deletesnapshot'), '-f', '-', '-v=6'], {
      input: JSON.stringify({ snapshot: snapshotID }),
    });
    expect(gone.code).not.toBe(0);
    expect(gone.stderr).toMatch(/404 Not Found/);
    expect(gone.stderr).toContain(`snapshot "${snapshotID}" of sandbox ${ns}/sb-snap not found`);
  });

  it('keeps the snapshots of a deleted sandbox listable, claimable and deletable, and out of reach of another namespace', async () => {
    await kubectl(['create', '-f', '-'], { input: sandboxYaml('sb-gone') });
    const raw = async (namespace: string, action: string, body: unknown) =>
      kubectl(['create', '--raw', `${BASE}/namespaces/${namespace}/sandboxes/sb-gone/${action}`, '-f', '-', '-v=6'], {
        input: JSON.stringify(body),
      });
    const made = await raw(ns, 'snapshot', { name: 'keep' });
    expect(made.code).toBe(0);
    const snapshotID = (JSON.parse(made.stdout) as { snapshotID: string }).snapshotID;
    expect((await kubectl(['delete', 'sandbox', 'sb-gone', '-n', ns])).code).toBe(0);
    await publish();
    expect((await kubectl(['get', 'sandbox', 'sb-gone', '-n', ns])).stderr).toContain('NotFound');

    const listed = await raw(ns, 'snapshots', {});
    expect(listed.code).toBe(0);
    expect((JSON.parse(listed.stdout) as { items: unknown[] }).items).toEqual([expect.objectContaining({ snapshotID, name: 'keep' })]);
    // the same name in another namespace reaches nothing
    for (const [action, body] of [
      ['snapshots', {}],
      ['claimsnapshot', { snapshot: snapshotID, name: 'sb-stolen' }],
      ['deletesnapshot', { snapshot: snapshotID }],
    ] as const) {
      const other = await raw('default', action, body);
      expect(other.code).not.toBe(0);
      expect(other.stderr).toMatch(/404 Not Found/);
    }

    const claimed = await raw(ns, 'claimsnapshot', { snapshot: snapshotID, name: 'sb-gone-branch' });
    expect(claimed.code).toBe(0);
    expect((await kubectl(['get', 'sandbox', 'sb-gone-branch', '-n', ns, '-o', 'jsonpath={.metadata.name}'])).stdout).toBe(
      'sb-gone-branch',
    );
    expect((await raw(ns, 'deletesnapshot', { snapshot: snapshotID })).code).toBe(0);
    // neither a sandbox nor a snapshot is left under the name
    expect((await raw(ns, 'snapshots', {})).stderr).toMatch(/404 Not Found/);
  });

  it('serves only the NodeInventories its selector matches: a node of another fleet is neither listed nor asked', async () => {
    // another fleet's node on the same control plane, at an address nothing answers on
    const foreign = `foreign-${suffix}`;
    const applied = await kubectl(['apply', '--server-side', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: EXTENSIONS_API_VERSION,
        kind: 'NodeInventory',
        metadata: { name: foreign },
        node: foreign,
        address: '127.0.0.1:9',
      }),
    });
    expect(applied.stderr).toBe('');
    try {
      // our own nodes' next publish comes after it in the watch, so once that is served the foreign one was seen too
      await publish();
      await kubectl(['create', '-f', '-'], { input: sandboxYaml('sb-scoped') });
      const gone = await kubectl(['create', '--raw', `${BASE}/namespaces/${ns}/sandboxes/sb-scoped/deletesnapshot`, '-f', '-', '-v=6'], {
        input: JSON.stringify({ snapshot: 'ck_0000000000000000' }),
      });
      // with the foreign node asked, this would be 503 "node ... did not answer"
      expect(gone.stderr).toMatch(/404 Not Found/);
      const listed = JSON.parse(
        (await kubectl(['create', '--raw', `${BASE}/namespaces/${ns}/sandboxes/sb-scoped/snapshots`, '-f', '-'], { input: '{}' })).stdout,
      ) as {
        items: unknown[];
        unreachableNodes?: string[];
      };
      expect(listed).toEqual(expect.objectContaining({ items: [] }));
      expect(listed.unreachableNodes).toBeUndefined();
    } finally {
      await kubectl(['delete', 'nodeinventory', foreign, '--ignore-not-found']);
    }
  });

  it('refuses a duplicate name with 409 AlreadyExists', async () => {
    await kubectl(['create', '-f', '-'], { input: sandboxYaml('sb-dup') });
    const second = await kubectl(['create', '-f', '-'], { input: sandboxYaml('sb-dup') });
    expect(second.code).not.toBe(0);
    expect(second.stderr).toContain('already exists');
  });

  it('creates nothing on a server-side dry run', async () => {
    const before = (
      await Promise.all(
        sim.nodes.map((n) =>
          fetch(`${n.url}/v1/info`, { headers: { Authorization: `Bearer ${TOKEN}` } }).then(
            (r) => r.json() as Promise<{ claimed: number }>,
          ),
        ),
      )
    ).reduce((a, i) => a + i.claimed, 0);
    const dry = await kubectl(['create', '--dry-run=server', '-f', '-'], { input: sandboxYaml('sb-dry') });
    expect(dry.stdout).toContain('created (server dry run)');
    const after = (
      await Promise.all(
        sim.nodes.map((n) =>
          fetch(`${n.url}/v1/info`, { headers: { Authorization: `Bearer ${TOKEN}` } }).then(
            (r) => r.json() as Promise<{ claimed: number }>,
          ),
        ),
      )
    ).reduce((a, i) => a + i.claimed, 0);
    expect(after).toBe(before);
    expect((await kubectl(['get', 'sandbox', 'sb-dry', '-n', ns])).stderr).toContain('NotFound');
  });

  it('answers 503 with Retry-After when no node has warm capacity', async () => {
    const body = {
      apiVersion: 'agents.x-k8s.io/v1beta1',
      kind: 'Sandbox',
      metadata: { name: 'sb-empty' },
      spec: { podTemplate: { spec: { containers: [{ name: 'm', image: `nothing-${suffix}` }] } } },
    };
    const r = await direct(`${server.url}${BASE}/namespaces/${ns}/sandboxes`, { method: 'POST', body, kc, ca: caPem });
    expect(r.status).toBe(503);
    expect(r.headers['retry-after']).toBe('1');
    expect(JSON.parse(r.body)).toMatchObject({ kind: 'Status', reason: 'ServiceUnavailable', code: 503 });
  });

  it('answers 401 without credentials and 403 for a ServiceAccount without RBAC', async () => {
    const anon = await direct(`${server.url}${BASE}/sandboxes`, { ca: caPem });
    expect(anon.status).toBe(401);
    expect(JSON.parse(anon.body)).toMatchObject({ kind: 'Status', reason: 'Unauthorized' });
    const healthz = await direct(`${server.url}/readyz`, { ca: caPem });
    expect(healthz.status).toBe(200);
    await kubectl(['create', 'serviceaccount', 'nobody', '-n', ns]);
    const saKc = await kubeconfigForServiceAccount(kc, ns, 'nobody');
    const path = join(tmpdir(), `sbapi-sa-${suffix}.yaml`);
    writeFileSync(path, kubeconfigText(saKc));
    const denied = await kubectl(['get', 'sandboxes', '-n', ns], { kubeconfig: path });
    expect(denied.stderr).toContain('forbidden');
  });

  it('lists published sandboxes with selectors, and deletes right after create', async () => {
    await kubectl(['create', '-f', '-'], { input: sandboxYaml('sb-del') });
    const del = await kubectl(['delete', 'sandbox', 'sb-del', '-n', ns]);
    expect(del.stdout).toContain('deleted');
    expect((await kubectl(['get', 'sandbox', 'sb-del', '-n', ns])).stderr).toContain('NotFound');
    await publish();
    const node = sim.nodes[0]?.name ?? '';
    const byNode = await kubectl(['get', 'sandboxes', '-n', ns, '--field-selector', `status.nodeName=${node}-${suffix}`, '-o', 'name']);
    const all = await kubectl(['get', 'sandboxes', '-n', ns, '-o', 'name']);
    expect(all.stdout).toContain('sb-one');
    expect(all.stdout).not.toContain('sb-del');
    expect(byNode.stdout.split('\n').filter((l) => l !== '').length).toBeLessThanOrEqual(
      all.stdout.split('\n').filter((l) => l !== '').length,
    );
    const labelled = await kubectl(['get', 'sandboxes', '-n', ns, '-l', 'sandbox.cocoonstack.io/phase in (Hibernated)', '-o', 'name']);
    expect(labelled.stdout).toContain('sb-one');
    const waited = await kubectl(['wait', '--for=condition=Ready=False', 'sandbox/sb-one', '-n', ns, '--timeout=20s']);
    expect(waited.stdout).toContain('condition met');
  });

  it('pages with kubectl --chunk-size: every sandbox exactly once', async () => {
    for (const name of ['sb-page-a', 'sb-page-b', 'sb-page-c']) await kubectl(['create', '-f', '-'], { input: sandboxYaml(name) });
    const whole = (await kubectl(['get', 'sandboxes', '-n', ns, '-o', 'name'])).stdout.split('\n').filter((l) => l !== '');
    const paged = await kubectl(['get', 'sandboxes', '-n', ns, '-o', 'name', '--chunk-size=1']);
    expect(paged.stderr).toBe('');
    expect(paged.stdout.split('\n').filter((l) => l !== '')).toEqual(whole);
    expect(whole.length).toBeGreaterThanOrEqual(3);
  });

  it('refuses unknown fields under fieldValidation=Strict, naming the field, before claiming anything', async () => {
    const body = {
      apiVersion: 'agents.x-k8s.io/v1beta1',
      kind: 'Sandbox',
      metadata: { name: 'sb-strict' },
      spec: { bogus: 1, podTemplate: { spec: { containers: [{ name: 'm', image }] } } },
    };
    const strict = await kubectl(['create', '--raw', `${BASE}/namespaces/${ns}/sandboxes?fieldValidation=Strict`, '-f', '-'], {
      input: JSON.stringify(body),
    });
    expect(strict.code).not.toBe(0);
    expect(strict.stderr).toMatch(/unknown field \\*"spec\.bogus\\*"/);
    expect((await kubectl(['get', 'sandbox', 'sb-strict', '-n', ns])).stderr).toContain('NotFound');
    const warned = await direct(`${server.url}${BASE}/namespaces/${ns}/sandboxes?fieldValidation=Warn&dryRun=All`, {
      method: 'POST',
      body,
      kc,
      ca: caPem,
    });
    expect(warned.status).toBe(201);
    expect(String(warned.headers.warning)).toMatch(/^299 - "unknown field \\"spec\.bogus\\""$/);
  });

  it('shows kubectl get -w with a label selector a DELETED when the phase leaves it and an ADDED when it comes back', async () => {
    await kubectl(['create', '-f', '-'], { input: sandboxYaml('sb-watched') });
    await publish();
    const w = kubectlWatch([
      'get',
      'sandboxes',
      '-n',
      ns,
      '-l',
      'sandbox.cocoonstack.io/phase=Running',
      '-w',
      '--output-watch-events',
      '-o',
      'jsonpath={.type} {.object.metadata.name} {.object.metadata.labels.sandbox\\.cocoonstack\\.io/phase}{"\\n"}',
    ]);
    try {
      const seen = (): string[] =>
        w
          .out()
          .split('\n')
          .filter((l) => l.includes(' sb-watched '));
      await eventually(() => expect(seen()).toEqual(['ADDED sb-watched Running']), { timeoutMs: 30_000 });
      expect(
        (await kubectl(['create', '--raw', `${BASE}/namespaces/${ns}/sandboxes/sb-watched/pause`, '-f', '-'], { input: '{}' })).stderr,
      ).toBe('');
      await publish();
      // the last state the selector matched, as kube-apiserver's watch cache sends it
      await eventually(() => expect(seen()).toEqual(['ADDED sb-watched Running', 'DELETED sb-watched Running']), { timeoutMs: 30_000 });
      expect(
        (await kubectl(['create', '--raw', `${BASE}/namespaces/${ns}/sandboxes/sb-watched/resume`, '-f', '-'], { input: '{}' })).stderr,
      ).toBe('');
      await publish();
      await eventually(
        () => expect(seen()).toEqual(['ADDED sb-watched Running', 'DELETED sb-watched Running', 'ADDED sb-watched Running']),
        { timeoutMs: 30_000 },
      );
      expect(w.err()).toBe('');
    } finally {
      await w.stop();
    }
  });

  it('answers a watch resumed across a restart with 410 Expired, and the relist drops what was deleted while the server was down', async () => {
    await kubectl(['create', '-f', '-'], { input: sandboxYaml('sb-gone-while-down') });
    await publish();
    const list = JSON.parse((await kubectl(['get', '--raw', `${BASE}/namespaces/${ns}/sandboxes`])).stdout) as {
      metadata: { resourceVersion: string };
      items: { metadata: { name: string; annotations?: Record<string, string> } }[];
    };
    const gone = list.items.find((i) => i.metadata.name === 'sb-gone-while-down');
    expect(gone).toBeDefined();
    await server.stop();
    const n0 = sim.nodes[0];
    if (n0 === undefined) throw new Error('no node');
    const claim = await fetch(`${n0.url}/v1/claim`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ template: image, claim_ref: `${ns}/sb-while-down` }),
    });
    expect(claim.status).toBe(200);
    // released on its node while no sandbox-apiserver was running: no process saw it go
    const id = gone?.metadata.annotations?.['sandbox.cocoonstack.io/claim-id'] ?? '';
    await Promise.all(sim.nodes.map((n) => new SandboxdClient({ baseUrl: n.url, token: TOKEN }).release(id).catch(() => undefined)));
    await publish();
    await startServer();
    // Replaying the rows changed since that revision could not carry the deletion, so the
    // resumed watch is told to relist (a 410 ERROR event, as kube-apiserver after a restart)
    const expired = await eventually(
      async () => {
        const r = await kubectl([
          'get',
          '--raw',
          `${BASE}/namespaces/${ns}/sandboxes?watch=true&resourceVersion=${list.metadata.resourceVersion}&timeoutSeconds=2`,
        ]);
        expect(r.stdout).toContain('"type":"ERROR"');
        return JSON.parse(r.stdout.trim().split('\n')[0] ?? '{}') as { object: { code: number; reason: string } };
      },
      { timeoutMs: 60_000 },
    );
    expect(expired.object).toMatchObject({ code: 410, reason: 'Expired' });
    const relist = await eventually(
      async () => {
        const names = (await kubectl(['get', 'sandboxes', '-n', ns, '-o', 'name'])).stdout;
        expect(names).toContain('sb-while-down');
        return names;
      },
      { timeoutMs: 60_000 },
    );
    expect(relist).not.toContain('sb-gone-while-down');
  });

  it('hands an informer whose watch outlives a restart a delete for the sandbox released while the server was down', async () => {
    await kubectl(['create', '-f', '-'], { input: sandboxYaml('sb-informed-gone') });
    await publish();
    const seen: string[] = [];
    const ServedSchema = z.looseObject({
      metadata: z.looseObject({
        name: z.string(),
        namespace: z.string().optional(),
        resourceVersion: z.string().optional(),
        annotations: z.record(z.string(), z.string()).optional(),
      }),
    });
    // the project's own informer, as the controllers run it: list, watch, 410 -> relist
    const informer = createInformer(kc, {
      resource: { group: 'agents.x-k8s.io', version: 'v1beta1', plural: 'sandboxes', kind: 'Sandbox', namespaced: true },
      namespace: ns,
      parse: (obj) => parseObject(ServedSchema, obj),
      log: quietLog,
      backoff: { baseMs: 200, maxMs: 1000 },
    });
    informer.on({ add: (o) => seen.push(`add ${o.metadata.name}`), delete: (o) => seen.push(`delete ${o.metadata.name}`) });
    informer.start();
    try {
      await eventually(async () => expect(seen).toContain('add sb-informed-gone'), { timeoutMs: 60_000 });
      const id =
        informer.list(ns).find((o) => o.metadata.name === 'sb-informed-gone')?.metadata.annotations?.['sandbox.cocoonstack.io/claim-id'] ??
        '';
      expect(id).toMatch(/^sb_/);
      await server.stop();
      // released on its node while no sandbox-apiserver was running: no process saw it go
      await Promise.all(sim.nodes.map((n) => new SandboxdClient({ baseUrl: n.url, token: TOKEN }).release(id).catch(() => undefined)));
      await publish();
      await startServer();
      await eventually(async () => expect(seen).toContain('delete sb-informed-gone'), { timeoutMs: 60_000 });
      expect(seen.filter((e) => e === 'delete sb-informed-gone')).toHaveLength(1);
      expect(informer.list(ns).map((o) => o.metadata.name)).not.toContain('sb-informed-gone');
    } finally {
      await informer.stop();
    }
  });

  it('keeps serving through its shutdown delay with /readyz failing and no connection kept alive, then closes', async () => {
    await server.stop();
    // long beside the calls made within it, so a slow machine still makes them in time
    await startServer({ shutdownDelayMs: 10_000 });
    const stopping = server.stop();
    try {
      const ready = await direct(`${server.url}/readyz?verbose`, { ca: caPem });
      expect(ready.status).toBe(500);
      expect(ready.body).toContain('[-]shutdown failed');
      const live = await direct(`${server.url}/healthz`, { ca: caPem });
      expect(live.status).toBe(200);
      // the caller's next request opens a new connection, which a Service sends to a replica that stays
      expect(live.headers.connection).toBe('close');
      // and through the aggregator, as a user meets it during a rolling restart
      const listed = await kubectl(['get', 'sandboxes', '-n', ns, '-o', 'name']);
      expect(listed.stderr).toBe('');
      expect(listed.code).toBe(0);
      await stopping;
      await expect(direct(`${server.url}/healthz`, { ca: caPem })).rejects.toThrow(/ECONNREFUSED/);
    } finally {
      await stopping;
      await startServer();
    }
  });
});
