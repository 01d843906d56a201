import type { KubeConfig } from '@kubernetes/client-node';
import { join } from 'node:path';
import {
  REPO_ROOT,
  applyCrds,
  createTestNamespace,
  deleteNamespace,
  eventually,
  kubeconfigForServiceAccount,
  kubectl,
  kubectlOk,
  runSuffix,
  runTool,
  testKubeConfig,
} from '../src/index';
import { inventoryBody, writeInventory, type InventoryWrite, type WriteAnswer } from '../src/testing/inventory-writes';

// The chart's ValidatingAdmissionPolicy for NodeInventory writes, rule by rule, on the real API
// server: the publisher ServiceAccount (with exactly the chart's RBAC) writes its own node's
// objects, `<node>` and `<node>.part-<n>`, and nothing of another node, by any verb; a token that
// names no node writes nothing; other users are not matched. The e2e suite
// (inventory-node-policy.e2e.test.ts) checks the same on the running system.

const suffix = runSuffix();
const release = `np-${suffix}`;
const fullname = `${release}-sandbox-scale`;
const policy = `${fullname}-inventory-node`;
const sa = `${fullname}-inventory-publisher`;
const nodeA = `np-a-${suffix}`;
const nodeB = `np-b-${suffix}`;
let kc: KubeConfig;
let ns: string;
let rendered = '';
let asA: KubeConfig;
let unbound: KubeConfig;
const created: string[] = [];

const refusedBy = (r: WriteAnswer, rule: string): void => {
  expect(r.status).toBe(403);
  expect(r.message).toContain(`ValidatingAdmissionPolicy '${policy}'`);
  expect(r.message).toContain(rule);
};

async function write(as: KubeConfig, w: InventoryWrite): Promise<WriteAnswer> {
  if (w.op !== 'delete') created.push(w.name);
  return writeInventory(as, w);
}

beforeAll(async () => {
  kc = testKubeConfig();
  await applyCrds(kc, join(REPO_ROOT, 'charts/sandbox-scale/crds'));
  ns = await createTestNamespace(kc, 'node-policy');
  const out = await runTool('helm', [
    'template',
    release,
    join(REPO_ROOT, 'charts/sandbox-scale'),
    '--namespace',
    ns,
    '--set',
    'workloads=false',
    '--show-only',
    'templates/serviceaccounts.yaml',
    '--show-only',
    'templates/rbac-inventory-publisher.yaml',
    '--show-only',
    'templates/inventory-publisher-node-policy.yaml',
  ]);
  if (out.code !== 0) throw new Error(`helm template: ${out.stderr}`);
  rendered = out.stdout;
  await kubectlOk(['apply', '-f', '-'], { input: rendered });
  // kube-apiserver names a node in a token bound to it only while the Node exists
  for (const name of [nodeA, nodeB])
    await kubectlOk(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name } }) });
  asA = await kubeconfigForServiceAccount(kc, ns, sa, 3600, nodeA);
  unbound = await kubeconfigForServiceAccount(kc, ns, sa, 3600);
  // node B's object, written by an admin (whom the policy does not match)
  await kubectlOk(['apply', '-f', '-'], { input: JSON.stringify(inventoryBody(nodeB, nodeB)) });
  created.push(nodeB);
  // the policy takes effect once kube-apiserver has loaded it and its binding
  await eventually(
    async () => refusedBy(await write(asA, { op: 'merge', name: nodeB, patch: { address: '10.9.9.9:1' } }), 'own node only'),
    {
      timeoutMs: 30_000,
    },
  );
});

afterAll(async () => {
  if (created.length > 0) await kubectl(['delete', 'nodeinventories', '--ignore-not-found', ...new Set(created)]);
  if (rendered !== '') await kubectl(['delete', '--ignore-not-found', '-f', '-'], { input: rendered });
  await kubectl(['delete', 'nodes', '--ignore-not-found', nodeA, nodeB]);
  if (ns) await deleteNamespace(kc, ns);
});

describe('the inventory-publisher node policy', () => {
  it("lets a publisher apply, patch and delete its own node's objects, parts included", async () => {
    expect(
      (await write(asA, { op: 'apply', name: nodeA, body: { ...inventoryBody(nodeA, nodeA), address: '10.0.0.1:7777' } })).status,
    ).toBe(201);
    expect((await write(asA, { op: 'merge', name: nodeA, patch: { address: '10.0.0.2:7777' } })).status).toBe(200);
    const part = `${nodeA}.part-3`;
    expect((await write(asA, { op: 'apply', name: part, body: inventoryBody(part, nodeA, 3) })).status).toBe(201);
    expect((await write(asA, { op: 'delete', name: part })).status).toBe(200);
  });

  it("refuses every write to another node's objects with 403, naming the policy and its rule", async () => {
    const address = (await kubectlOk(['get', 'nodeinventory', nodeB, '-o', 'jsonpath={.address}'])).stdout;
    refusedBy(
      await write(asA, { op: 'apply', name: nodeB, body: { ...inventoryBody(nodeB, nodeB), address: '10.6.6.6:1' } }),
      'own node only',
    );
    refusedBy(await write(asA, { op: 'merge', name: nodeB, patch: { address: '10.6.6.6:1' } }), `not "${nodeB}"`);
    refusedBy(await write(asA, { op: 'delete', name: nodeB }), 'own node only');
    // a part of another node, and an object of another node under a name of its own node
    refusedBy(
      await write(asA, { op: 'apply', name: `${nodeB}.part-1`, body: inventoryBody(`${nodeB}.part-1`, nodeB, 1) }),
      'own node only',
    );
    refusedBy(
      await write(asA, { op: 'apply', name: `${nodeA}.part-1`, body: inventoryBody(`${nodeA}.part-1`, nodeB, 1) }),
      'own node only',
    );
    // one that does not exist yet is refused at create
    const fresh = `np-c-${suffix}`;
    refusedBy(await write(asA, { op: 'apply', name: fresh, body: inventoryBody(fresh, fresh) }), 'own node only');
    expect((await kubectl(['get', 'nodeinventory', fresh])).code).not.toBe(0);
    expect((await kubectlOk(['get', 'nodeinventory', nodeB, '-o', 'jsonpath={.address}'])).stdout).toBe(address);
  });

  it('refuses a publisher token that names no node, even for an object of its own name', async () => {
    refusedBy(await write(unbound, { op: 'apply', name: nodeA, body: inventoryBody(nodeA, nodeA) }), 'node-bound token required');
    refusedBy(await write(unbound, { op: 'merge', name: nodeB, patch: { address: '10.6.6.6:1' } }), 'node-bound token required');
  });

  it('matches the publisher ServiceAccount only: another account bound to the same ClusterRole writes as RBAC lets it', async () => {
    // the publisher's ClusterRole, bound to a second ServiceAccount: RBAC alone decides for it
    const other = `${fullname}-other`;
    await kubectlOk(['create', 'serviceaccount', other, '-n', ns]);
    await kubectlOk(['create', 'clusterrolebinding', other, `--clusterrole=${sa}`, `--serviceaccount=${ns}:${other}`]);
    try {
      const asOther = await kubeconfigForServiceAccount(kc, ns, other, 3600, nodeA);
      await eventually(
        async () => expect((await write(asOther, { op: 'merge', name: nodeB, patch: { address: '10.0.0.3:7777' } })).status).toBe(200),
        {
          timeoutMs: 30_000,
        },
      );
    } finally {
      await kubectl(['delete', 'clusterrolebinding', other, '--ignore-not-found']);
    }
  });
});
