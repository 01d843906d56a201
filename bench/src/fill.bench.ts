/**
 * Warm fill: a SandboxWarmPool goes from 0 to 50,000 replicas over 20 simulated nodes, with the
 * warmpool-driver and one inventory-publisher per node running in-process against a control
 * plane this bench starts. Prints a table, then ONE JSON line (the last line). Figures only.
 *
 *   npx nx run bench:fill
 */
import { Registry } from 'prom-client';
import { applyCrds, startControlPlane } from '@sandbox-scale/e2e';
import { ResourceClient, createLogger } from '@sandbox-scale/kube-runtime';
import { EXTENSIONS_API_VERSION, SandboxWarmPoolSchema, parseObject } from '@sandbox-scale/scale-core';
import { SandboxdClientSet } from '@sandbox-scale/sandboxd-client';
import { startSim } from '@sandbox-scale/sandboxd-sim';
import { startPublisher } from '@sandbox-scale/inventory-publisher';
import { SandboxTemplateResource, SandboxWarmPoolResource, startDriver } from '@sandbox-scale/warmpool-driver';
import { runBench } from './run-bench';

const NODES = Number(process.env.FILL_NODES ?? 20);
const REPLICAS = Number(process.env.FILL_REPLICAS ?? 50_000);
const SPEED = 0.01;
const PUBLISH_INTERVAL_MS = 1000;
const SYNC_INTERVAL_MS = 1000;
const TIMEOUT_MS = 240_000;
const TOKEN = 'bench-fleet-token';
const IMAGE = 'bench/fill:1';
const NS = 'default';

async function waitFor(what: string, check: () => Promise<boolean>): Promise<number> {
  const t0 = performance.now();
  while (!(await check())) {
    if (performance.now() - t0 > TIMEOUT_MS) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return performance.now();
}

async function main(): Promise<void> {
  const log = createLogger({ name: 'bench-fill', level: process.env.LOG_LEVEL ?? 'silent' });
  const cp = await startControlPlane({ controllerManager: false });
  const kc = cp.kubeConfig;
  const sim = await startSim({ nodes: NODES, speed: SPEED, token: TOKEN, refillConcurrency: 32, refillTickMs: 500 });
  const registry = new Registry();
  try {
    await applyCrds(kc, 'charts/sandbox-scale/crds');
    const publishers = sim.nodes.map((n) =>
      startPublisher({
        nodeName: `fill-${n.name}`,
        sandboxdUrl: n.url,
        advertiseAddress: n.addr,
        publishIntervalMs: PUBLISH_INTERVAL_MS,
        fleetToken: TOKEN,
        kubeConfig: kc,
        log,
        registry,
      }),
    );
    const driver = startDriver({ kubeConfig: kc, log, registry, fleetToken: TOKEN, syncIntervalMs: SYNC_INTERVAL_MS });
    const pools = new ResourceClient(kc, SandboxWarmPoolResource);
    await new ResourceClient(kc, SandboxTemplateResource).create(NS, {
      apiVersion: EXTENSIONS_API_VERSION,
      kind: 'SandboxTemplate',
      metadata: { name: 'fill', namespace: NS },
      spec: { podTemplate: { spec: { containers: [{ name: 'main', image: IMAGE }] } } },
    });
    await pools.create(NS, {
      apiVersion: EXTENSIONS_API_VERSION,
      kind: 'SandboxWarmPool',
      metadata: { name: 'fill', namespace: NS },
      spec: { replicas: 0, sandboxTemplateRef: { name: 'fill' } },
    });
    const readPool = async () => parseObject(SandboxWarmPoolSchema, await pools.get(NS, 'fill'));
    const clients = new SandboxdClientSet({ token: TOKEN });
    const targets = async (): Promise<number[]> =>
      Promise.all(
        sim.nodes.map(async (n) =>
          (await clients.forNode(n.url).info()).pools.filter((p) => p.key.template === IMAGE).reduce((a, p) => a + p.target, 0),
        ),
      );
    // Baseline: every node holds the (empty) key and the pool reports 0, so only the change is measured.
    await waitFor(
      'baseline',
      async () =>
        (await targets()).length === NODES && (await readPool()).status?.readyReplicas === 0 && (driver.pusher?.puts ?? 0) >= NODES,
    );
    const writes = (): number => driver.reconciler.statusWrites + publishers.reduce((a, p) => a + p.publisher.writes, 0);
    const puts0 = driver.pusher?.puts ?? 0;
    const writes0 = writes();

    const t0 = performance.now();
    await pools.mergePatch(NS, 'fill', { spec: { replicas: REPLICAS } });
    const tPush = await waitFor('targets', async () => {
      const t = await targets();
      return t.reduce((a, b) => a + b, 0) === REPLICAS && Math.max(...t) - Math.min(...t) <= 1;
    });
    const tReady = await waitFor('readyReplicas', async () => (await readPool()).status?.readyReplicas === REPLICAS);
    const ready = (await readPool()).status?.readyReplicas ?? 0;
    const result = {
      nodes: NODES,
      replicas: REPLICAS,
      puts: (driver.pusher?.puts ?? 0) - puts0,
      push_s: Number(((tPush - t0) / 1000).toFixed(3)),
      ready_s: Number(((tReady - t0) / 1000).toFixed(3)),
      ready_replicas: ready,
      apiserver_writes: writes() - writes0,
    };
    const vmsPerS = Math.round(REPLICAS / ((tReady - t0) / 1000));
    console.log('fill: SandboxWarmPool 0 -> replicas, in-process driver + publishers, sandboxd-sim speed', SPEED);
    console.table([
      { figure: 'nodes', value: result.nodes },
      { figure: 'replicas', value: result.replicas },
      { figure: 'sandboxd PUTs for the change', value: result.puts },
      { figure: 'push (s, until every node has its target)', value: result.push_s },
      { figure: 'ready (s, until status.readyReplicas = replicas)', value: result.ready_s },
      { figure: 'fleet fill rate (warm VMs/s)', value: vmsPerS },
      { figure: 'apiserver writes (status + inventories)', value: result.apiserver_writes },
    ]);
    await driver.stop();
    await Promise.all(publishers.map((p) => p.stop()));
    await clients.close();
    console.log(JSON.stringify(result));
  } finally {
    await sim.stop();
    await cp.stop();
  }
}

runBench(main);
