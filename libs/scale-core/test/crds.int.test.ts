import { ApiextensionsV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { applyCrds, createTestNamespace, deleteNamespace, eventually, kubectl, runSuffix, testKubeConfig } from '@sandbox-scale/e2e';
import { join } from 'node:path';
import { EXTENSIONS_GROUP, RESOURCES, API_VERSION } from '../src/index';

// The generated CRDs, as a user installs them: applied to the real kube-apiserver, then
// exercised through kubectl so the validation messages are the ones users read.
const kc = testKubeConfig();
const crdDir = join(__dirname, '..', '..', '..', 'charts', 'sandbox-scale', 'crds');
const apiVersion = `${EXTENSIONS_GROUP}/${API_VERSION}`;
let ns: string;

const template = (name: string): object => ({
  apiVersion,
  kind: 'SandboxTemplate',
  metadata: { name },
  spec: {
    podTemplate: {
      metadata: { annotations: { 'sandbox.cocoonstack.io/net': 'none' } },
      spec: { containers: [{ name: 'main', image: 'ghcr.io/example/agent:1', resources: { requests: { cpu: '500m', memory: '1Gi' } } }] },
    },
  },
});
const pool = (name: string, replicas: number): object => ({
  apiVersion,
  kind: 'SandboxWarmPool',
  metadata: { name },
  spec: { replicas, sandboxTemplateRef: { name: 'tpl' } },
});
const claim = (name: string): object => ({ apiVersion, kind: 'SandboxClaim', metadata: { name }, spec: { warmPoolRef: { name: 'pool' } } });
const inventory = (name: string, node = name): object => ({
  apiVersion,
  kind: 'NodeInventory',
  metadata: { name },
  node,
  address: '10.0.0.7:9090',
  entries: [
    { name: 'team-a/sb-1', id: 'sb_0123456789abcdef', phase: 'Running', addr: '10.0.0.7:40001', claimedAt: '2025-01-01T00:00:00Z' },
  ],
  pools: [{ template: 'tpl', warm: 3, target: 4 }],
});

function create(obj: object): ReturnType<typeof kubectl> {
  return kubectl(['create', '-n', ns, '-o', 'json', '-f', '-'], { input: JSON.stringify(obj) });
}

beforeAll(async () => {
  await applyCrds(kc, crdDir);
  ns = await createTestNamespace(kc, 'crds');
  // Established comes a moment before every endpoint serves.
  const custom = kc.makeApiClient(CustomObjectsApi);
  await eventually(
    () =>
      custom.listNamespacedCustomObject({
        group: EXTENSIONS_GROUP,
        version: API_VERSION,
        namespace: ns,
        plural: RESOURCES.sandboxWarmPool.plural,
      }),
    { timeoutMs: 30_000 },
  );
  await eventually(
    () => custom.listClusterCustomObject({ group: EXTENSIONS_GROUP, version: API_VERSION, plural: RESOURCES.nodeInventory.plural }),
    { timeoutMs: 30_000 },
  );
});
afterAll(async () => {
  await deleteNamespace(kc, ns);
});

describe('the generated CRDs on a real kube-apiserver', () => {
  it('are all Established, with the scopes and subresources the spec asks for', async () => {
    const ext = kc.makeApiClient(ApiextensionsV1Api);
    const kinds = [RESOURCES.sandboxTemplate, RESOURCES.sandboxWarmPool, RESOURCES.sandboxClaim, RESOURCES.nodeInventory];
    for (const r of kinds) {
      const crd = await ext.readCustomResourceDefinition({ name: `${r.plural}.${EXTENSIONS_GROUP}` });
      expect(crd.status?.conditions?.find((c) => c.type === 'Established')?.status).toBe('True');
      expect(crd.spec.scope).toBe(r.namespaced ? 'Namespaced' : 'Cluster');
      expect(crd.spec.versions.map((v) => v.name)).toEqual([API_VERSION]);
    }
    const warm = await ext.readCustomResourceDefinition({ name: `${RESOURCES.sandboxWarmPool.plural}.${EXTENSIONS_GROUP}` });
    expect(warm.spec.versions[0]?.subresources?.scale).toEqual({
      specReplicasPath: '.spec.replicas',
      statusReplicasPath: '.status.replicas',
      labelSelectorPath: '.status.selector',
    });
  });

  it('accepts a valid object of each kind', async () => {
    for (const obj of [template('tpl'), pool('pool', 3), claim('c1')]) {
      const res = await create(obj);
      expect(res).toMatchObject({ code: 0 });
    }
    const inv = `node-${runSuffix()}`;
    const created = await kubectl(['create', '-o', 'json', '-f', '-'], { input: JSON.stringify(inventory(inv)) });
    expect(created.code).toBe(0);
    try {
      const got = await kubectl(['get', `nodeinventories.${EXTENSIONS_GROUP}`, inv, '-o', 'json']);
      expect(JSON.parse(got.stdout)).toMatchObject({
        node: inv,
        pools: [{ template: 'tpl', warm: 3, target: 4 }],
        entries: [{ id: 'sb_0123456789abcdef' }],
      });
    } finally {
      await kubectl(['delete', `nodeinventories.${EXTENSIONS_GROUP}`, inv, '--wait=false']);
    }
  });

  it('rejects a negative spec.replicas, naming the field', async () => {
    const res = await create(pool('negative', -1));
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain('spec.replicas');
    expect(res.stderr).toMatch(/greater than or equal to 0/);
  });

  it('rejects objects missing required fields, naming each', async () => {
    const noRef = await create({ apiVersion, kind: 'SandboxWarmPool', metadata: { name: 'noref' }, spec: { replicas: 1 } });
    expect(noRef.code).not.toBe(0);
    expect(noRef.stderr).toMatch(/spec\.sandboxTemplateRef: Required value/);

    const noPoolRef = await create({ apiVersion, kind: 'SandboxClaim', metadata: { name: 'nopool' }, spec: {} });
    expect(noPoolRef.code).not.toBe(0);
    expect(noPoolRef.stderr).toMatch(/spec\.warmPoolRef: Required value/);

    const noContainers = await create({
      apiVersion,
      kind: 'SandboxTemplate',
      metadata: { name: 'nocontainers' },
      spec: { podTemplate: { spec: {} } },
    });
    expect(noContainers.code).not.toBe(0);
    expect(noContainers.stderr).toMatch(/spec\.podTemplate\.spec\.containers: Required value/);
  });

  it('rejects a NodeInventory whose node differs from its name, and a negative warm count', async () => {
    const name = `node-${runSuffix()}`;
    const mismatch = await kubectl(['create', '-f', '-'], { input: JSON.stringify(inventory(name, 'another-node')) });
    expect(mismatch.code).not.toBe(0);
    expect(mismatch.stderr).toMatch(/node: Invalid value.*node must equal metadata\.name/);

    const negative = { ...inventory(name), pools: [{ template: 'tpl', warm: -2, target: 1 }] };
    const res = await kubectl(['create', '-f', '-'], { input: JSON.stringify(negative) });
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain('pools[0].warm');
  });

  it('takes a NodeInventory row as one string up to its limit, and refuses a longer one naming it', async () => {
    const name = `rows-${runSuffix()}`;
    const row = JSON.stringify([`team/${'a'.repeat(60)}`, 'sb_1', 'Running']);
    const ok = await kubectl(['create', '-f', '-'], { input: JSON.stringify({ ...inventory(name), rows: [row] }) });
    expect(ok.code).toBe(0);
    const long = await kubectl(['create', '-f', '-'], {
      input: JSON.stringify({ ...inventory(`${name}-long`), rows: [row, JSON.stringify(['x'.repeat(5000), 'sb_2', 'Running'])] }),
    });
    expect(long.code).not.toBe(0);
    expect(long.stderr).toMatch(/rows\[1\]: Too long/);
    await kubectl(['delete', `nodeinventories.${EXTENSIONS_GROUP}`, name, '--wait=false']);
  });

  it('documents its fields for kubectl explain', async () => {
    const res = await kubectl(['explain', `sandboxwarmpools.spec`, `--api-version=${apiVersion}`]);
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/Desired warm capacity of the pool/);
    expect(res.stdout).toMatch(/replicas\s+<integer>/);
    expect(res.stdout).toMatch(/Desired number of warm sandboxes across the fleet/);
    expect(res.stdout).toMatch(/sandboxTemplateRef\s+<Object> -required-/);
  });

  it('scales a SandboxWarmPool through the scale subresource', async () => {
    const created = await create(pool('scaled', 2));
    expect(created.code).toBe(0);
    const scaled = await kubectl(['scale', '-n', ns, 'sandboxwarmpool/scaled', '--replicas=7']);
    expect(scaled).toMatchObject({ code: 0 });
    const got = await kubectl(['get', '-n', ns, 'sandboxwarmpool/scaled', '-o', 'jsonpath={.spec.replicas}']);
    expect(got.stdout).toBe('7');
    const scale = await kubectl(['get', '--raw', `/apis/${apiVersion}/namespaces/${ns}/sandboxwarmpools/scaled/scale`]);
    expect(JSON.parse(scale.stdout)).toMatchObject({ kind: 'Scale', spec: { replicas: 7 } });

    const refused = await kubectl(['scale', '-n', ns, 'sandboxwarmpool/scaled', '--replicas=-3']);
    expect(refused.code).not.toBe(0);
  });
});
