import type { KubeConfig } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { applyCrds, createTestNamespace, eventually, startControlPlane, type ControlPlane } from '@sandbox-scale/e2e';
import { ResourceClient } from '@sandbox-scale/kube-runtime';
import { captureLog } from '@sandbox-scale/kube-runtime/testing';
import { NodeInventorySchema, SandboxWarmPoolSchema, parseObject } from '@sandbox-scale/scale-core';
import { NodeInventoryResource, SandboxTemplateResource, SandboxWarmPoolResource, startDriver, type RunningDriver } from '../src/index';
import { TOKEN, keysOf, pool, startFleet, targetsOf, template, type Fleet } from './driver-fixture';

// The chart's default: one driver for every namespace. It lists every pool in the cluster, so it
// runs against a control plane of its own instead of the one other suites share.
const NODES = 3;
const ORPHAN = { template: 'img:orphan', net: 'none', size: 'small', warm: 1 };
let cp: ControlPlane;
let kcw: KubeConfig;
let ns: string;
let fleet: Fleet;
let driver: RunningDriver;
let pools: ResourceClient;
let templates: ResourceClient;

const start = (): RunningDriver =>
  startDriver({
    kubeConfig: kcw,
    log: captureLog().log,
    registry: new Registry(),
    fleetToken: TOKEN,
    syncIntervalMs: 500,
    nodeInventorySelector: fleet.selector,
  });
const readPool = async (name: string) => parseObject(SandboxWarmPoolSchema, await pools.get(ns, name));
const degraded = async (name: string) => (await readPool(name)).status?.conditions?.find((c) => c.type === 'Degraded');

/** Adds a key to node 0 behind the driver's back, as another writer (or a pool deleted while no driver ran) leaves one. */
async function addOrphan(): Promise<void> {
  const info = await fleet.info(0);
  const current = info.pools.map((p) => ({ template: p.key.template, net: p.key.net, size: p.key.size, warm: p.target }));
  await fleet.client(0).setPools([...current, ORPHAN]);
}

async function orphanTarget(): Promise<number> {
  return (await targetsOf(fleet, ORPHAN.template))[0] ?? 0;
}

beforeAll(async () => {
  cp = await startControlPlane({ controllerManager: false });
  kcw = cp.kubeConfig;
  await applyCrds(kcw, 'charts/sandbox-scale/crds');
  ns = await createTestNamespace(kcw, 'wide');
  pools = new ResourceClient(kcw, SandboxWarmPoolResource);
  templates = new ResourceClient(kcw, SandboxTemplateResource);
  fleet = await startFleet(NODES, kcw);
  driver = start();
});

afterAll(async () => {
  await driver?.stop();
  await fleet?.stop();
  await cp?.stop();
});

describe('a cluster-wide warmpool-driver', () => {
  it('keeps a pool with a deleted template on its key across a restart, and still scales it', async () => {
    await templates.create(ns, template(ns, 'tpl-1', 'img:w1'));
    await pools.create(ns, pool(ns, 'pool-1', 'tpl-1', 6));
    await templates.create(ns, template(ns, 'tpl-2', 'img:w2'));
    await pools.create(ns, pool(ns, 'pool-2', 'tpl-2', 3));
    await eventually(
      async () => {
        expect(await targetsOf(fleet, 'img:w1')).toEqual([2, 2, 2]);
        expect(await targetsOf(fleet, 'img:w2')).toEqual([1, 1, 1]);
        expect((await readPool('pool-1')).status?.poolKey?.template).toBe('img:w1');
      },
      { timeoutMs: 30_000 },
    );

    await templates.delete(ns, 'tpl-1');
    await eventually(async () => expect(await degraded('pool-1')).toMatchObject({ status: 'True', reason: 'TemplateNotFound' }), {
      timeoutMs: 30_000,
    });
    await driver.stop();
    driver = start();
    await eventually(() => expect(driver.pusher?.puts ?? 0).toBeGreaterThanOrEqual(NODES), { timeoutMs: 30_000 });
    expect(await targetsOf(fleet, 'img:w1')).toEqual([2, 2, 2]);
    await pools.mergePatch(ns, 'pool-1', { spec: { replicas: 9 } });
    await eventually(async () => expect(await targetsOf(fleet, 'img:w1')).toEqual([3, 3, 3]), { timeoutMs: 30_000 });
  });

  it('drains a key no pool accounts for while every pool has a known key', async () => {
    // added while no driver runs, so the key is surely there before one looks (a running one may drain it at once)
    await driver.stop();
    await addOrphan();
    expect(await orphanTarget()).toBe(1);
    driver = start();
    await eventually(async () => expect(await keysOf(fleet, 0)).not.toContain(ORPHAN.template), { timeoutMs: 30_000 });
  });

  it('keeps such keys while a pool has no known key, and drains them once that pool is deleted', async () => {
    // A template that never existed: the pool never had a key, so any unattributed key might be its.
    await pools.create(ns, pool(ns, 'pool-keyless', 'tpl-never', 2));
    await eventually(
      async () => {
        const d = await degraded('pool-keyless');
        expect(d).toMatchObject({ status: 'True', reason: 'TemplateNotFound' });
        expect(d?.message).toContain('spec.sandboxTemplateRef.name');
        expect(d?.message).toContain('no pool key was ever recorded');
      },
      { timeoutMs: 30_000 },
    );
    await addOrphan();
    // Wait until node 0 has published the orphan, then make the driver PUT every node again.
    await eventually(
      async () => {
        const inv = parseObject(
          NodeInventorySchema,
          await new ResourceClient(kcw, NodeInventoryResource).get(undefined, fleet.nodeNames[0] ?? ''),
        );
        expect(inv.pools?.some((p) => p.template === ORPHAN.template)).toBe(true);
      },
      { timeoutMs: 30_000 },
    );
    const puts = driver.pusher?.puts ?? 0;
    await pools.mergePatch(ns, 'pool-1', { spec: { replicas: 12 } });
    await eventually(async () => expect(await targetsOf(fleet, 'img:w1')).toEqual([4, 4, 4]), { timeoutMs: 30_000 });
    expect(driver.pusher?.puts ?? 0).toBeGreaterThanOrEqual(puts + NODES);
    expect(await orphanTarget()).toBe(1);

    await pools.delete(ns, 'pool-keyless');
    await eventually(async () => expect(await keysOf(fleet, 0)).not.toContain(ORPHAN.template), { timeoutMs: 30_000 });
    expect(await targetsOf(fleet, 'img:w1')).toEqual([4, 4, 4]);
    expect(await targetsOf(fleet, 'img:w2')).toEqual([1, 1, 1]);
  });

  it('keeps the old key of a template change across a restart until the new key is warm', async () => {
    await templates.create(ns, template(ns, 'tpl-3', 'img:r1'));
    await pools.create(ns, pool(ns, 'pool-3', 'tpl-3', 3));
    await eventually(async () => expect(await targetsOf(fleet, 'img:r1')).toEqual([1, 1, 1]), { timeoutMs: 30_000 });
    // The new key cannot warm yet: every boot of it fails.
    for (const n of fleet.sim.nodes) fleet.sim.node(n.name).setFaults({ failProvision: [{ template: 'img:r2' }] });
    await templates.mergePatch(ns, 'tpl-3', { spec: { podTemplate: { spec: { containers: [{ name: 'main', image: 'img:r2' }] } } } });
    await eventually(
      async () => {
        expect(await targetsOf(fleet, 'img:r2')).toEqual([1, 1, 1]);
        const status = (await readPool('pool-3')).status;
        expect([status?.poolKey?.template, status?.retiringPoolKey?.template]).toEqual(['img:r2', 'img:r1']);
      },
      { timeoutMs: 30_000 },
    );
    expect(await targetsOf(fleet, 'img:r1')).toEqual([1, 1, 1]);

    await driver.stop();
    driver = start();
    await eventually(() => expect(driver.pusher?.puts ?? 0).toBeGreaterThanOrEqual(NODES), { timeoutMs: 30_000 });
    expect(await targetsOf(fleet, 'img:r1')).toEqual([1, 1, 1]);
    expect(await targetsOf(fleet, 'img:r2')).toEqual([1, 1, 1]);

    for (const n of fleet.sim.nodes) fleet.sim.node(n.name).clearFaults();
    await eventually(
      async () => {
        expect(await keysOf(fleet, 0)).not.toContain('img:r1');
        const status = (await readPool('pool-3')).status;
        expect(status?.readyReplicas).toBe(3);
        expect(status?.retiringPoolKey).toBeUndefined();
        // The node retries a failed golden build after 30 s.
      },
      { timeoutMs: 90_000 },
    );
  });

  it('drains the last-good key only when its pool is deleted', async () => {
    await pools.delete(ns, 'pool-1');
    await eventually(
      async () => {
        for (let i = 0; i < NODES; i++) expect(await keysOf(fleet, i)).toEqual(['img:r2', 'img:w2']);
      },
      { timeoutMs: 30_000 },
    );
  });
});
