import type { KubeConfig } from '@kubernetes/client-node';
import { RELEASE } from '../src/system/local-system';
import { startSuiteSystem } from '../src/system/suite-system';
import type { SystemUnderTest } from '../src/system/system-under-test';
import { kubeconfigForServiceAccount, kubectl, runSuffix } from '../src/index';
import { inventoryBody, writeInventory, type WriteAnswer } from '../src/testing/inventory-writes';

// A node's publisher, as deployed, against the chart's node policy: with its ServiceAccount and a
// token bound to its node (installed: the node the publisher pod runs on; local: the Node each
// simulated node is registered as, the token every local publisher runs with), it writes its own
// node's NodeInventory and is refused, with a 403 that names the policy and the rule, every write
// to another node's. The publishers themselves keep publishing under the policy.

const suffix = runSuffix();
const POLICY = `${RELEASE}-inventory-node`;
const PUBLISHER_SA = `${RELEASE}-inventory-publisher`;
const LABEL = `sandbox-scale.test/node-policy-${suffix}`;
let sys: SystemUnderTest;
let own: string;
let foreign: string;
let asPublisher: KubeConfig;

const admin = (args: string[], input?: string): ReturnType<typeof kubectl> => kubectl(args, { kubeconfig: sys.kubeconfigPath, input });

function refusedAsForeign(r: WriteAnswer, name: string): void {
  expect(r.status).toBe(403);
  expect(r.message).toContain(`ValidatingAdmissionPolicy '${POLICY}'`);
  expect(r.message).toContain(
    `own node only: the inventory-publisher on node "${own}" may write only that node's NodeInventory, not "${name}"`,
  );
}

beforeAll(async () => {
  sys = await startSuiteSystem({ local: { nodes: 2 } });
  own = sys.nodes[0]?.name ?? '';
  if (own === '') throw new Error('the system has no node');
  // another node's inventory, written by an admin (the policy matches the publisher only); it
  // has no address, so nothing routes to it meanwhile
  foreign = `other-${suffix}`;
  const created = await admin(['apply', '-f', '-'], JSON.stringify(inventoryBody(foreign, foreign)));
  if (created.code !== 0) throw new Error(`kubectl apply: ${created.stderr}`);
  asPublisher = await kubeconfigForServiceAccount(sys.kubeConfig, sys.publisherNamespace, PUBLISHER_SA, 600, own);
}, 300_000);

afterAll(async () => {
  if (sys) {
    await admin(['delete', 'nodeinventory', foreign, `other-new-${suffix}`, '--ignore-not-found']);
    await admin(['label', 'nodeinventory', own, `${LABEL}-`]);
    await sys.stop();
  }
}, 120_000);

describe("a node's publisher under the chart's node policy", () => {
  it('publishes every node, with no write of a publisher refused', async () => {
    const names = (await admin(['get', 'nodeinventories', '-o', 'jsonpath={.items[*].metadata.name}'])).stdout.split(' ');
    for (const n of sys.nodes) expect(names).toContain(n.name);
    const refused = [...(await sys.appLogs())]
      .filter(([app]) => app.includes('inventory-publisher'))
      .filter(([, text]) => text.includes(`ValidatingAdmissionPolicy '${POLICY}'`))
      .map(([app]) => app);
    expect(refused).toEqual([]);
  });

  it("writes its own node's NodeInventory", async () => {
    expect(
      (await writeInventory(asPublisher, { op: 'merge', name: own, patch: { metadata: { labels: { [LABEL]: 'yes' } } } })).status,
    ).toBe(200);
    expect((await admin(['get', 'nodeinventory', own, '-o', `jsonpath={.metadata.labels}`])).stdout).toContain(LABEL);
    expect((await writeInventory(asPublisher, { op: 'merge', name: own, patch: { metadata: { labels: { [LABEL]: null } } } })).status).toBe(
      200,
    );
  });

  it("is refused another node's NodeInventory by every verb, with a 403 naming the policy and the rule", async () => {
    const before = (await admin(['get', 'nodeinventory', foreign, '-o', 'json'])).stdout;
    refusedAsForeign(
      await writeInventory(asPublisher, {
        op: 'apply',
        name: foreign,
        body: { ...inventoryBody(foreign, foreign), address: '10.6.6.6:7777' },
      }),
      foreign,
    );
    refusedAsForeign(await writeInventory(asPublisher, { op: 'merge', name: foreign, patch: { address: '10.6.6.6:7777' } }), foreign);
    refusedAsForeign(await writeInventory(asPublisher, { op: 'delete', name: foreign }), foreign);
    const fresh = `other-new-${suffix}`;
    refusedAsForeign(await writeInventory(asPublisher, { op: 'apply', name: fresh, body: inventoryBody(fresh, fresh) }), fresh);
    expect((await admin(['get', 'nodeinventory', foreign, '-o', 'json'])).stdout).toBe(before);
    expect((await admin(['get', 'nodeinventory', fresh])).code).not.toBe(0);
  });

  it("is refused a node of the running system's inventory where there is a second node", async () => {
    const second = sys.nodes[1]?.name;
    // the installed chart runs one node; its foreign object above stands for the others
    if (second === undefined) return;
    refusedAsForeign(await writeInventory(asPublisher, { op: 'merge', name: second, patch: { address: '10.6.6.6:7777' } }), second);
    refusedAsForeign(await writeInventory(asPublisher, { op: 'delete', name: second }), second);
  });
});

describe("a node's sandboxd root token", () => {
  const info = async (url: string, token: string): Promise<number> =>
    (await fetch(`${url}/v1/info`, { headers: { authorization: `Bearer ${token}` } })).status;

  it('is its own: each node takes only its own, and neither the fleet token nor another node’s is root on it', async () => {
    const seen: Record<string, { own: number; fleet: number; others: number[] }> = {};
    for (const n of sys.nodes) {
      const others = sys.nodes.filter((o) => o.name !== n.name);
      seen[n.name] = {
        own: await info(n.url, n.token),
        fleet: await info(n.url, sys.fleetToken),
        others: await Promise.all(others.map((o) => info(n.url, o.token))),
      };
      expect(n.token).not.toBe(sys.fleetToken);
    }
    console.log(JSON.stringify({ test: 'node-tokens', nodes: seen }));
    expect(Object.values(seen)).toEqual(
      sys.nodes.map((n) => ({ own: 200, fleet: 401, others: sys.nodes.filter((o) => o !== n).map(() => 401) })),
    );
  });
});
