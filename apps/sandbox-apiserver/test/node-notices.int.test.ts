import { randomBytes } from 'node:crypto';
import { request } from 'node:https';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import {
  applyCrds,
  createCA,
  createLeaf,
  createTestNamespace,
  deleteNamespace,
  eventually,
  freePort,
  installChartAppRbac,
  kubectl,
  kubectlOk,
  requireHostAddress,
  runSuffix,
  serviceAccountToken,
  testKubeConfig,
  tokenKubeConfig,
  type ChartAppIdentity,
} from '@sandbox-scale/e2e';
import { createInformer, type Informer } from '@sandbox-scale/kube-runtime';
import { startPublisher, type RunningPublisher } from '@sandbox-scale/inventory-publisher';
import { NODE_NOTICE_PATH, NodeInventorySchema, OwnerRefKey, parseObject, RESOURCES } from '@sandbox-scale/scale-core';
import { SandboxdClient } from '@sandbox-scale/sandboxd-client';
import { startSim, type Sim } from '@sandbox-scale/sandboxd-sim';
import { Registry } from 'prom-client';
import { z } from 'zod';
import { startSandboxApiserver, type RunningSandboxApiserver } from '../src';
import { quietLog, suiteLabels, suiteSelector } from './fleet-fixture';

/**
 * Node notices (docs/adr/0007) against the real control plane: an inventory-publisher under the
 * chart's ServiceAccount, with a token bound to a pod on its node, finds sandbox-apiserver through
 * an EndpointSlice and tells it of each change on a sandboxd-sim node; the watch events come
 * before the next publish (a 60 s interval), and a notice for another node is refused.
 */
const TOKEN = 'fleet-secret';
const SERVICE = 'sandbox-apiserver';
const suffix = runSuffix();
const image = `registry.local/notices-${suffix}:1`;

let kc: KubeConfig;
let ns: string;
let sim: Sim;
let node: SandboxdClient;
let nodeA: string;
let nodeB: string;
let identity: ChartAppIdentity;
let boundToken: string;
let caPem: string;
let port: number;
let server: RunningSandboxApiserver;
let publisher: RunningPublisher;
let watcher: Informer<Served>;
const events: string[] = [];

const ServedSchema = z.looseObject({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: z.looseObject({ name: z.string(), namespace: z.string().optional(), resourceVersion: z.string().optional() }),
  status: z.looseObject({ conditions: z.array(z.looseObject({ type: z.string(), reason: z.string().optional() })).optional() }).optional(),
});
type Served = z.infer<typeof ServedSchema>;
const reasonOf = (s: Served): string => s.status?.conditions?.find((c) => c.type === 'Ready')?.reason ?? '';

/** A kubeconfig that talks to the sandbox-apiserver directly, as the admin (client certificate). */
function directKubeConfig(): KubeConfig {
  const admin = kc.getCurrentUser();
  const out = new KubeConfig();
  out.loadFromOptions({
    clusters: [{ name: 'direct', server: `https://127.0.0.1:${port}`, caData: Buffer.from(caPem).toString('base64') }],
    users: [
      { name: 'admin', ...(admin?.certData ? { certData: admin.certData } : {}), ...(admin?.keyData ? { keyData: admin.keyData } : {}) },
    ],
    contexts: [{ name: 'direct', cluster: 'direct', user: 'admin' }],
    currentContext: 'direct',
  });
  return out;
}

/** POSTs a notice body to the server as the holder of `token` (none when empty). */
function postNotice(token: string, body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        hostname: '127.0.0.1',
        port,
        path: NODE_NOTICE_PATH,
        method: 'POST',
        ca: caPem,
        servername: 'localhost',
        headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Entries of node A's NodeInventory as etcd holds it now. */
async function publishedNames(): Promise<string[]> {
  const out = await kubectlOk(['get', 'nodeinventory', nodeA, '-o', 'json']);
  return (parseObject(NodeInventorySchema, JSON.parse(out.stdout)).entries ?? []).map((e) => e.name);
}

beforeAll(async () => {
  kc = testKubeConfig();
  await applyCrds(kc, 'charts/sandbox-scale/crds');
  ns = await createTestNamespace(kc, 'notices');
  sim = await startSim({ nodes: 1, speed: 0, token: TOKEN, pools: [{ template: image, warm: 4 }] });
  for (const n of sim.nodes) sim.node(n.name).tick();
  const simNode = sim.nodes[0];
  if (!simNode) throw new Error('no sim node');
  node = new SandboxdClient({ baseUrl: simNode.url, token: TOKEN });
  nodeA = `${simNode.name}-${suffix}`;
  nodeB = `other-${suffix}`;
  // Node objects: kube-apiserver names a pod's node in its bound tokens only when the Node exists
  for (const name of [nodeA, nodeB])
    await kubectlOk(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name } }) });
  identity = await installChartAppRbac(kc, 'inventory-publisher', {
    release: `fr-${suffix}`,
    namespace: ns,
    set: ['inventoryPublisher.notices.enabled=true'],
  });
  const sa = identity.username.split(':').pop() ?? '';
  // the publisher's pod on node A (never run: no kubelet), and a token bound to it, as the kubelet mounts it
  await kubectlOk(['apply', '-f', '-'], {
    input: JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'publisher-a', namespace: ns },
      spec: {
        nodeName: nodeA,
        serviceAccountName: sa,
        automountServiceAccountToken: false,
        containers: [{ name: 'publisher', image: 'registry.local/inventory-publisher:test' }],
      },
    }),
  });
  boundToken = (
    await kubectlOk(['create', 'token', sa, '-n', ns, '--bound-object-kind=Pod', '--bound-object-name=publisher-a', '--duration=1h'])
  ).stdout.trim();

  const ca = await createCA(`notices-ca-${suffix}`);
  const leaf = await createLeaf(ca, {
    commonName: SERVICE,
    dnsNames: [`${SERVICE}.${ns}.svc`, 'localhost'],
    ips: ['127.0.0.1'],
    server: true,
  });
  caPem = ca.cert;
  const certFile = join(tmpdir(), `notices-${suffix}.crt`);
  const keyFile = join(tmpdir(), `notices-${suffix}.key`);
  writeFileSync(certFile, leaf.cert);
  writeFileSync(keyFile, leaf.key);
  port = await freePort();
  server = await startSandboxApiserver({
    claimRefKey: new OwnerRefKey(randomBytes(32)),
    kubeConfig: kc,
    securePort: port,
    // the publisher reaches it at the address its EndpointSlice lists, the watch on loopback
    bindAddress: '0.0.0.0',
    tlsCertFile: certFile,
    tlsPrivateKeyFile: keyFile,
    serviceName: SERVICE,
    serviceNamespace: ns,
    fleetToken: TOKEN,
    log: quietLog,
    inventorySelector: suiteSelector(suffix),
    noticePublisher: identity.username,
  });
  await server.synced;
  // the replica as the Service's EndpointSlice lists it (no Service: no controller manages this slice)
  await kubectlOk(['apply', '-f', '-'], {
    input: JSON.stringify({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: `${SERVICE}-test`, namespace: ns, labels: { 'kubernetes.io/service-name': SERVICE } },
      addressType: 'IPv4',
      endpoints: [{ addresses: [requireHostAddress()], conditions: { ready: true } }],
      ports: [{ name: 'https', port, protocol: 'TCP' }],
    }),
  });
  watcher = createInformer<Served>(directKubeConfig(), {
    resource: RESOURCES.sandbox,
    namespace: ns,
    parse: (o) => ServedSchema.parse(o),
    log: quietLog,
  });
  watcher.on({
    add: (s) => events.push(`ADDED ${s.metadata.name} ${reasonOf(s)}`),
    update: (s) => events.push(`MODIFIED ${s.metadata.name} ${reasonOf(s)}`),
    delete: (s) => events.push(`DELETED ${s.metadata.name}`),
  });
  watcher.start();
  expect(await watcher.waitForSync()).toBe(true);
}, 120_000);

afterAll(async () => {
  await publisher?.stop();
  await watcher?.stop();
  await server?.stop();
  await node?.close();
  await sim?.stop();
  if (nodeA) await kubectl(['delete', 'nodeinventory', nodeA, '--ignore-not-found']);
  for (const name of [nodeA, nodeB]) if (name) await kubectl(['delete', 'node', name, '--ignore-not-found', '--wait=false']);
  await identity?.remove();
  if (ns) await deleteNamespace(kc, ns);
});

describe('node notices', () => {
  it('shows a sandbox claimed, hibernated and released on its node as watch events before the next publish', async () => {
    await node.claim({ template: image, claimRef: `${ns}/sb-before` });
    publisher = startPublisher({
      nodeName: nodeA,
      sandboxdUrl: sim.nodes[0]?.url ?? '',
      advertiseAddress: sim.nodes[0]?.addr ?? '',
      // the next publish is a minute away: every event below comes from a notice
      publishIntervalMs: 60_000,
      noticeIntervalMs: 100,
      labels: suiteLabels(suffix),
      fleetToken: TOKEN,
      kubeConfig: tokenKubeConfig(kc, boundToken),
      log: quietLog,
      registry: new Registry(),
      notices: { service: { namespace: ns, name: SERVICE }, caPem },
    });
    // the first publish, seen through the informer and the watch
    await eventually(() => expect(events).toContain('ADDED sb-before Running'), { timeoutMs: 30_000 });
    await eventually(() => expect(publisher.noticeTargets()).toEqual([`${requireHostAddress()}:${port}`]), { timeoutMs: 30_000 });
    const writes = publisher.publisher.writes;
    expect(writes).toBeGreaterThan(0);

    const fresh = await node.claim({ template: image, claimRef: `${ns}/sb-fresh` });
    await eventually(() => expect(events).toContain('ADDED sb-fresh Running'), { timeoutMs: 30_000 });
    await node.hibernate(fresh.id);
    await eventually(() => expect(events).toContain('MODIFIED sb-fresh Hibernated'), { timeoutMs: 30_000 });
    await node.release(fresh.id);
    await eventually(() => expect(events).toContain('DELETED sb-fresh'), { timeoutMs: 30_000 });

    // no publish happened meanwhile: etcd still holds the node as it was before sb-fresh
    expect(publisher.publisher.writes).toBe(writes);
    expect(await publishedNames()).toEqual([`${ns}/sb-before`]);
    expect(events.filter((e) => e.includes('sb-fresh'))).toEqual([
      'ADDED sb-fresh Running',
      'MODIFIED sb-fresh Hibernated',
      'DELETED sb-fresh',
    ]);
  });

  it('refuses a notice for another node, from an unbound token or without one, and answers bad bodies with a Status', async () => {
    const notice = (n: string): string => JSON.stringify({ node: n, seq: Date.now() + 60_000, entries: [] });
    const other = await postNotice(boundToken, notice(nodeB));
    expect(other.status).toBe(403);
    expect(JSON.parse(other.body)).toMatchObject({ kind: 'Status', reason: 'Forbidden' });
    expect(other.body).toContain(`a publisher on node \\"${nodeA}\\" cannot tell of node \\"${nodeB}\\"`);

    const unbound = await serviceAccountToken(kc, ns, identity.username.split(':').pop() ?? '', []);
    const noNode = await postNotice(unbound, notice(nodeA));
    expect(noNode.status).toBe(403);
    expect(noNode.body).toContain('not bound to a pod on a node');

    expect((await postNotice('', notice(nodeA))).status).toBe(401);
    const notJson = await postNotice(boundToken, '{"node":');
    expect(notJson.status).toBe(400);
    const invalid = await postNotice(boundToken, JSON.stringify({ node: nodeA, seq: 'soon', entries: [] }));
    expect(invalid.status).toBe(422);
    expect(JSON.parse(invalid.body)).toMatchObject({ kind: 'Status', reason: 'Invalid' });
    expect(invalid.body).toContain('seq');
    for (const r of [other, noNode, notJson, invalid]) {
      expect(r.body).not.toContain(boundToken);
      expect(r.body).not.toContain(unbound);
    }
    // the refused notices changed nothing, and the server still serves
    expect(events.filter((e) => e.includes('sb-before'))).toEqual(['ADDED sb-before Running']);
    expect((await postNotice(boundToken, JSON.stringify({ node: nodeA, seq: 1, entries: [] }))).body).toBe('{"applied":false}');
  });
});
