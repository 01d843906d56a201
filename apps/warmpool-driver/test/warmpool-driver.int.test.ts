import { Registry } from 'prom-client';
import { applyCrds, createTestNamespace, deleteNamespace, eventually, kubectl, testKubeconfigPath } from '@sandbox-scale/e2e';
import { captureLog } from '@sandbox-scale/kube-runtime/testing';
import { NodeInventorySchema, parseObject } from '@sandbox-scale/scale-core';
import { startDriver, type RunningDriver } from '../src/index';
import {
  TOKEN,
  inventoriesApi,
  kc,
  keysOf,
  condition,
  pool,
  poolsApi,
  readPool,
  startFleet,
  targetsOf,
  template,
  templatesApi,
  type Fleet,
} from './driver-fixture';

let ns: string;
let fleet: Fleet;
let driver: RunningDriver;
const registry = new Registry();
const REPUSHES = 'sandbox_scale_warmpool_driver_repushes_total';
const repushes = async (): Promise<number> => (await registry.getSingleMetric(REPUSHES)?.get())?.values[0]?.value ?? 0;
const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);

beforeAll(async () => {
  await applyCrds(kc, 'charts/sandbox-scale/crds');
  ns = await createTestNamespace(kc, 'wpd');
  fleet = await startFleet(7);
  const { log } = captureLog();
  driver = startDriver({
    kubeConfig: kc,
    log,
    registry,
    fleetToken: TOKEN,
    syncIntervalMs: 500,
    namespace: ns,
    nodeInventorySelector: fleet.selector,
  });
});

afterAll(async () => {
  await driver?.stop();
  await fleet?.stop();
  await deleteNamespace(kc, ns);
});

describe('warmpool-driver against a real API server, publishers and sandboxd-sim', () => {
  it('spreads 1,000 replicas over 7 nodes exactly (sum 1000, max - min <= 1)', async () => {
    await templatesApi.create(ns, template(ns, 'tpl-a', 'img:a'));
    await poolsApi.create(ns, pool(ns, 'pool-a', 'tpl-a', 1000));
    await eventually(
      async () => {
        const t = await targetsOf(fleet, 'img:a');
        expect(sum(t)).toBe(1000);
        expect(Math.max(...t) - Math.min(...t)).toBeLessThanOrEqual(1);
      },
      { timeoutMs: 30_000 },
    );
  });

  it('reports status that converges to the warm counts the nodes publish', async () => {
    await eventually(
      async () => {
        const p = await readPool(ns, 'pool-a');
        expect(p.status).toMatchObject({
          replicas: 1000,
          readyReplicas: 1000,
          selector: 'agents.x-k8s.io/warm-pool=pool-a',
          observedGeneration: p.metadata.generation,
        });
        expect(condition(p, 'Ready')).toMatchObject({ status: 'True', reason: 'PoolWarm' });
        expect(condition(p, 'Degraded')).toMatchObject({ status: 'False' });
      },
      { timeoutMs: 60_000 },
    );
  });

  it('PUTs each node the full set of pools targeting it', async () => {
    await templatesApi.create(ns, template(ns, 'tpl-b', 'img:b'));
    await poolsApi.create(ns, pool(ns, 'pool-b', 'tpl-b', 3));
    await eventually(
      async () => {
        for (let i = 0; i < 7; i++) expect(await keysOf(fleet, i)).toEqual(['img:a', 'img:b']);
        expect(sum(await targetsOf(fleet, 'img:b'))).toBe(3);
        expect(sum(await targetsOf(fleet, 'img:a'))).toBe(1000);
      },
      { timeoutMs: 30_000 },
    );
  });

  it('moves node targets when kubectl scale changes the replicas', async () => {
    const out = await kubectl(['-n', ns, 'scale', 'sandboxwarmpool/pool-a', '--replicas=70'], { kubeconfig: testKubeconfigPath() });
    expect(out.stdout).toContain('scaled');
    await eventually(
      async () => {
        const t = await targetsOf(fleet, 'img:a');
        expect(t).toEqual([10, 10, 10, 10, 10, 10, 10]);
      },
      { timeoutMs: 30_000 },
    );
    await eventually(async () => expect((await readPool(ns, 'pool-a')).status?.readyReplicas).toBe(70), { timeoutMs: 30_000 });
  });

  it('drains nothing when a template cannot be read, and says so in Degraded', async () => {
    const before = await targetsOf(fleet, 'img:b');
    await templatesApi.delete(ns, 'tpl-b');
    await eventually(
      async () => expect(condition(await readPool(ns, 'pool-b'), 'Degraded')).toMatchObject({ status: 'True', reason: 'TemplateNotFound' }),
      { timeoutMs: 30_000 },
    );
    // Several syncs later the key is still there with the same targets.
    const syncs = driver.reconciler.syncs;
    await eventually(() => expect(driver.reconciler.syncs).toBeGreaterThanOrEqual(syncs + 3), { timeoutMs: 30_000 });
    expect(await targetsOf(fleet, 'img:b')).toEqual(before);
    expect(sum(before)).toBe(3);
    const describe = await kubectl(['-n', ns, 'describe', 'sandboxwarmpool', 'pool-b'], { kubeconfig: testKubeconfigPath() });
    expect(describe.stdout).toContain('TemplateNotFound');
  });

  it('drains the key of a deleted pool', async () => {
    await poolsApi.delete(ns, 'pool-b');
    await eventually(
      async () => {
        for (let i = 0; i < 7; i++) expect(await keysOf(fleet, i)).toEqual(['img:a']);
      },
      { timeoutMs: 30_000 },
    );
  });

  it('moves a pool to the new key on a template change and drains the old key', async () => {
    await templatesApi.mergePatch(ns, 'tpl-a', { spec: { podTemplate: { spec: { containers: [{ name: 'main', image: 'img:a2' }] } } } });
    await eventually(
      async () => {
        expect(sum(await targetsOf(fleet, 'img:a2'))).toBe(70);
        for (let i = 0; i < 7; i++) expect(await keysOf(fleet, i)).toEqual(['img:a2']);
      },
      { timeoutMs: 30_000 },
    );
    await eventually(async () => expect((await readPool(ns, 'pool-a')).status?.readyReplicas).toBe(70), { timeoutMs: 30_000 });
  });

  it('refuses to send targets without a fleet token, and says so on the pool', async () => {
    const ns2 = await createTestNamespace(kc, 'wpd-notoken');
    const { log } = captureLog();
    const tokenless = startDriver({
      kubeConfig: kc,
      log,
      registry: new Registry(),
      fleetToken: '',
      syncIntervalMs: 500,
      namespace: ns2,
      nodeInventorySelector: fleet.selector,
    });
    try {
      await templatesApi.create(ns2, template(ns2, 'tpl-c', 'img:c'));
      await poolsApi.create(ns2, pool(ns2, 'pool-c', 'tpl-c', 5));
      await eventually(
        async () =>
          expect(condition(await readPool(ns2, 'pool-c'), 'Degraded')).toMatchObject({ status: 'True', reason: 'FleetTokenMissing' }),
        { timeoutMs: 30_000 },
      );
      expect(tokenless.pusher).toBeUndefined();
      for (let i = 0; i < 7; i++) expect(await keysOf(fleet, i)).not.toContain('img:c');
    } finally {
      await tokenless.stop();
      await deleteNamespace(kc, ns2);
    }
  });

  it('gives a malformed SandboxWarmPool a condition naming the field', async () => {
    await poolsApi.create(ns, pool(ns, 'pool-bad', 'Not_A_Template!', 2));
    await eventually(
      async () => {
        const ready = condition(await readPool(ns, 'pool-bad'), 'Ready');
        expect(ready).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
        expect(ready?.message).toContain('spec.sandboxTemplateRef.name');
      },
      { timeoutMs: 30_000 },
    );
  });

  it('sends no re-push in steady state, while the nodes publish reports newer than the last PUT', async () => {
    // 3 replicas over 7 nodes: most nodes hold img:s at target 0, which must not read as drift.
    await templatesApi.create(ns, template(ns, 'tpl-s', 'img:s'));
    await poolsApi.create(ns, pool(ns, 'pool-s', 'tpl-s', 3));
    await eventually(async () => expect((await readPool(ns, 'pool-s')).status?.readyReplicas).toBe(3), { timeoutMs: 30_000 });
    // The rule is only exercised once every node has published after its last PUT (a new resourceVersion).
    await eventually(
      async () => {
        for (const node of fleet.nodeNames) {
          const inv = parseObject(NodeInventorySchema, await inventoriesApi.get(undefined, node));
          expect(inv.metadata.resourceVersion).not.toBe(driver.pusher?.rvAtLastPut(node));
        }
      },
      { timeoutMs: 30_000 },
    );
    // Earlier tests changed targets; a report the publisher read just before such a PUT and wrote
    // just after it costs one idempotent re-PUT (node-drift.ts). Steady state starts from here.
    const base = await repushes();
    const syncs = driver.reconciler.syncs;
    // 10 syncs of 500 ms cover more than a dozen 300 ms publish intervals.
    await eventually(
      async () => {
        expect(await repushes()).toBe(base);
        expect(driver.reconciler.syncs).toBeGreaterThanOrEqual(syncs + 10);
      },
      { timeoutMs: 30_000 },
    );
    expect(await repushes()).toBe(base);
  });

  it('restores a node whose pools were reset behind its back, and the pool gets ready again', async () => {
    const before = await targetsOf(fleet, 'img:a2');
    expect(before[2]).toBe(10);
    const base = await repushes();
    // What a sandboxd restart with an empty pools.json, or another writer, leaves behind.
    await fleet.client(2).setPools([]);
    expect((await targetsOf(fleet, 'img:a2'))[2]).toBe(0);
    await eventually(
      async () => {
        expect(await targetsOf(fleet, 'img:a2')).toEqual(before);
        expect(sum(await targetsOf(fleet, 'img:s'))).toBe(3);
      },
      { timeoutMs: 30_000 },
    );
    expect(await repushes()).toBeGreaterThan(base);
    await eventually(
      async () => {
        expect((await readPool(ns, 'pool-a')).status?.readyReplicas).toBe(70);
        expect((await readPool(ns, 'pool-s')).status?.readyReplicas).toBe(3);
      },
      { timeoutMs: 30_000 },
    );
  });
  it('keeps a pool whose template turned invalid on its last-good key across a driver restart, until the pool is deleted', async () => {
    await templatesApi.create(ns, template(ns, 'tpl-i', 'img:i'));
    await poolsApi.create(ns, pool(ns, 'pool-i', 'tpl-i', 14));
    await eventually(async () => expect(await targetsOf(fleet, 'img:i')).toEqual([2, 2, 2, 2, 2, 2, 2]), { timeoutMs: 30_000 });
    // No image: the template parses, but it has no pool key.
    await templatesApi.mergePatch(ns, 'tpl-i', { spec: { podTemplate: { spec: { containers: [{ name: 'main' }] } } } });
    await eventually(
      async () => {
        const d = condition(await readPool(ns, 'pool-i'), 'Degraded');
        expect(d).toMatchObject({ status: 'True', reason: 'TemplateInvalid' });
        expect(d?.message).toContain('spec.sandboxTemplateRef.name');
      },
      { timeoutMs: 30_000 },
    );

    await driver.stop();
    const { log } = captureLog();
    driver = startDriver({
      kubeConfig: kc,
      log,
      registry: new Registry(),
      fleetToken: TOKEN,
      syncIntervalMs: 500,
      namespace: ns,
      nodeInventorySelector: fleet.selector,
    });
    // A fresh driver PUTs every node once.
    await eventually(() => expect(driver.pusher?.puts ?? 0).toBeGreaterThanOrEqual(7), { timeoutMs: 30_000 });
    expect(await targetsOf(fleet, 'img:i')).toEqual([2, 2, 2, 2, 2, 2, 2]);
    expect(sum(await targetsOf(fleet, 'img:a2'))).toBe(70);
    // The restarted driver knows the pool's key: scaling moves its targets.
    await poolsApi.mergePatch(ns, 'pool-i', { spec: { replicas: 21 } });
    await eventually(async () => expect(await targetsOf(fleet, 'img:i')).toEqual([3, 3, 3, 3, 3, 3, 3]), { timeoutMs: 30_000 });

    await poolsApi.delete(ns, 'pool-i');
    await eventually(
      async () => {
        for (let i = 0; i < 7; i++) expect(await keysOf(fleet, i)).not.toContain('img:i');
      },
      { timeoutMs: 30_000 },
    );
  });
});
