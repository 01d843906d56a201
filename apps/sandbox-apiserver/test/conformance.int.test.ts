import { randomBytes } from 'node:crypto';
import { KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';
import {
  applyCrds,
  createTestNamespace,
  eventually,
  freePort,
  kubectl,
  runSuffix,
  startControlPlane,
  type ControlPlane,
} from '@sandbox-scale/e2e';
import { startSim, type Sim } from '@sandbox-scale/sandboxd-sim';
import { startSandboxApiserver, type RunningSandboxApiserver } from '../src';
import { API_SERVICE, registerApiService, writeServingCert } from './aggregator-fixture';
import { publishInventories, quietLog } from './fleet-fixture';
import { OwnerRefKey } from '@sandbox-scale/scale-core';

/**
 * The steps of the sample-apiserver conformance test (kubernetes test/e2e/apimachinery/aggregator.go)
 * against `sandboxes`. The APIService is cluster-wide and the shared test
 * cluster's is registered by aggregated-api.int.test.ts, so this file runs its own control plane:
 * unregistering here cannot pull the group from under that file.
 */

const TOKEN = 'conformance-fleet-token';
const BASE = '/apis/agents.x-k8s.io/v1beta1';
const suffix = runSuffix();
const image = `registry.local/conf-${suffix}:1`;

let cp: ControlPlane;
let sim: Sim;
let server: RunningSandboxApiserver;
let ns = '';
let caPem = '';
let port = 0;

const k = (args: string[], input?: string) => kubectl(args, { kubeconfig: cp.kubeconfigPath, ...(input === undefined ? {} : { input }) });

function sandbox(name: string): KubernetesObject & { spec: unknown } {
  return {
    apiVersion: 'agents.x-k8s.io/v1beta1',
    kind: 'Sandbox',
    metadata: { name, namespace: ns },
    spec: { podTemplate: { spec: { containers: [{ name: 'main', image }] } } },
  };
}

beforeAll(async () => {
  cp = await startControlPlane({ controllerManager: false });
  await applyCrds(cp.kubeConfig, 'charts/sandbox-scale/crds');
  ns = await createTestNamespace(cp.kubeConfig, 'sbconf');
  sim = await startSim({ nodes: 1, speed: 0, token: TOKEN, pools: [{ template: image, warm: 4 }] });
  for (const n of sim.nodes) sim.node(n.name).tick();
  await eventually(async () => {
    await publishInventories(cp.kubeConfig, sim.nodes, TOKEN, suffix);
    const out = await k(['get', 'nodeinventories', `${sim.nodes[0]?.name}-${suffix}`, '-o', 'jsonpath={.pools[0].warm}']);
    expect(Number(out.stdout)).toBeGreaterThan(0);
  });
  const files = await writeServingCert(`conf-${suffix}`, ns);
  caPem = files.caPem;
  port = await freePort();
  server = await startSandboxApiserver({
    claimRefKey: new OwnerRefKey(randomBytes(32)),
    kubeConfig: cp.kubeConfig,
    securePort: port,
    bindAddress: '127.0.0.1',
    tlsCertFile: files.cert,
    tlsPrivateKeyFile: files.key,
    fleetToken: TOKEN,
    serviceNamespace: ns,
    log: quietLog,
  });
  await server.synced;
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await sim?.stop();
  await cp?.stop();
});

describe('sample-apiserver conformance steps against sandboxes', () => {
  it('registers, serves CRUD through the aggregator, and disappears when unregistered', async () => {
    // the conformance test's APIService priorities: group 2000, version 200
    await registerApiService({
      namespace: ns,
      port,
      caPem,
      groupPriorityMinimum: 2000,
      versionPriority: 200,
      kubeconfig: cp.kubeconfigPath,
    });

    // the aggregator's availability check passes
    await eventually(
      async () => {
        const r = await k(['get', 'apiservice', API_SERVICE, '-o', 'jsonpath={.status.conditions[?(@.type=="Available")].status}']);
        expect(r.stdout).toBe('True');
      },
      { timeoutMs: 60_000 },
    );

    // poll a raw GET of the collection until it is neither 403, 503 nor 404
    await eventually(
      async () => {
        const r = await k(['get', '--raw', `${BASE}/namespaces/${ns}/sandboxes`]);
        expect(r.code).toBe(0);
        expect(JSON.parse(r.stdout)).toMatchObject({ kind: 'SandboxList', items: [] });
      },
      { timeoutMs: 60_000 },
    );

    // POST answers 201 and echoes kind and name
    const created = await k(
      ['create', '--raw', `${BASE}/namespaces/${ns}/sandboxes`, '-f', '-', '-v=6'],
      JSON.stringify(sandbox('conf-1')),
    );
    expect(created.stderr).toMatch(/verb="POST" url="https:\/\/\S+\/namespaces\/[^/]+\/sandboxes" status="201 Created"/);
    expect(JSON.parse(created.stdout)).toMatchObject({ kind: 'Sandbox', metadata: { name: 'conf-1', namespace: ns } });

    // GET of the object and a list with exactly it
    expect(JSON.parse((await k(['get', '--raw', `${BASE}/namespaces/${ns}/sandboxes/conf-1`])).stdout)).toMatchObject({
      kind: 'Sandbox',
      metadata: { name: 'conf-1' },
    });
    const one = JSON.parse((await k(['get', '--raw', `${BASE}/namespaces/${ns}/sandboxes`])).stdout) as {
      items: { metadata: { name: string } }[];
    };
    expect(one.items.map((i) => i.metadata.name)).toEqual(['conf-1']);

    // PATCH of labels is served and kept; a patch of any other field is refused, the object unchanged
    const patched = await k(['patch', 'sandbox', 'conf-1', '-n', ns, '--type=merge', '-p', '{"metadata":{"labels":{"x":"y"}}}']);
    expect(patched.stderr).toBe('');
    expect(patched.code).toBe(0);
    expect(JSON.parse((await k(['get', '--raw', `${BASE}/namespaces/${ns}/sandboxes/conf-1`])).stdout)).toMatchObject({
      metadata: { labels: { x: 'y' } },
    });
    const refused = await k(['patch', 'sandbox', 'conf-1', '-n', ns, '--type=merge', '-p', '{"spec":{"service":true}}']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/is invalid: spec\.service/);

    // DELETE, then the list is empty
    const deleted = await k(['delete', '--raw', `${BASE}/namespaces/${ns}/sandboxes/conf-1`]);
    expect(deleted.code).toBe(0);
    await eventually(async () => {
      const zero = JSON.parse((await k(['get', '--raw', `${BASE}/namespaces/${ns}/sandboxes`])).stdout) as { items: unknown[] };
      expect(zero.items).toEqual([]);
    });

    // discovery of the preferred namespaced resources finds sandboxes; a dynamic client then
    // creates, lists and deletes through it
    const resources = await k(['api-resources', '--namespaced=true', '--api-group=agents.x-k8s.io', '-o', 'name']);
    expect(resources.stdout.split('\n')).toContain('sandboxes.agents.x-k8s.io');
    const dynamic = KubernetesObjectApi.makeApiClient(cp.kubeConfig);
    const made = await dynamic.create(sandbox('conf-dyn'));
    expect(made.metadata?.name).toBe('conf-dyn');
    const listed = await dynamic.list('agents.x-k8s.io/v1beta1', 'Sandbox', ns);
    expect(listed.items.map((i) => i.metadata?.name)).toEqual(['conf-dyn']);
    await dynamic.delete(sandbox('conf-dyn'));
    await eventually(async () => {
      expect((await dynamic.list('agents.x-k8s.io/v1beta1', 'Sandbox', ns)).items).toEqual([]);
    });

    // the group is in legacy and aggregated discovery, and the APIService status says why
    expect(JSON.parse((await k(['get', '--raw', '/apis'])).stdout)).toMatchObject({
      groups: expect.arrayContaining([expect.objectContaining({ name: 'agents.x-k8s.io' })]),
    });
    const status = await k(['get', 'apiservice', API_SERVICE, '-o', 'jsonpath={.status.conditions[?(@.type=="Available")].message}']);
    expect(status.stdout).toContain('all checks passed');

    // patch versionPriority, as the conformance test does
    const prio = await k(['patch', 'apiservice', API_SERVICE, '--type=merge', '-p', '{"spec":{"versionPriority":400}}']);
    expect(prio.code).toBe(0);
    expect((await k(['get', 'apiservice', API_SERVICE, '-o', 'jsonpath={.spec.versionPriority}'])).stdout).toBe('400');

    // unregister: the group leaves discovery
    expect((await k(['delete', 'apiservice', API_SERVICE])).code).toBe(0);
    await eventually(
      async () => {
        const apis = JSON.parse((await k(['get', '--raw', '/apis'])).stdout) as { groups: { name: string }[] };
        expect(apis.groups.map((g) => g.name)).not.toContain('agents.x-k8s.io');
        expect((await k(['get', '--raw', `${BASE}/namespaces/${ns}/sandboxes`])).code).not.toBe(0);
      },
      { timeoutMs: 30_000 },
    );
  });
});
