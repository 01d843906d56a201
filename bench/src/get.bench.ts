// bench:get — one sandbox's GET through the APIService at a small and a large fleet (O(1)
// get: the ratio should stay near 1), then create → get → pause sequences against simulated
// nodes (read-after-create). Prints a table, then JSON.
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { KubeConfig } from '@kubernetes/client-node';
import { applyObject } from '@sandbox-scale/kube-runtime';
import { applyCrds, eventually, freePort, startControlPlane } from '@sandbox-scale/e2e';
import { buildInventory } from '@sandbox-scale/inventory-publisher';
import { SandboxdClient } from '@sandbox-scale/sandboxd-client';
import { startSim, type Sim } from '@sandbox-scale/sandboxd-sim';
import { EXTENSIONS_API_VERSION, RESOURCES } from '@sandbox-scale/scale-core';
import { httpsClient, p50, registerApiService, startBenchApiserver, writeServingCert, type Client, type Reply } from './aggregated-server';
import { runBench } from './run-bench';

const run = promisify(execFile);
const NODES = Number(process.env.BENCH_NODES ?? 40);
const SMALL = Number(process.env.BENCH_GET_SMALL ?? 1_000);
const LARGE = Number(process.env.BENCH_GET_LARGE ?? 100_000);
const GETS = Number(process.env.BENCH_GETS ?? 400);
const CREATES = Number(process.env.BENCH_CREATES ?? 1_000);
const SIM_NODES = 4;
const TOKEN = 'bench-fleet-token';
const IMAGE = 'registry.local/bench-get:1';
const BASE = '/apis/agents.x-k8s.io/v1beta1';

/** `total` synthetic sandboxes spread over NODES inventories (the list bench's shape). */
async function writeFleet(kc: KubeConfig, total: number): Promise<string[]> {
  const perNode = Math.ceil(total / NODES);
  const names: string[] = [];
  for (let n = 0; n < NODES; n++) {
    const node = `bench-node-${n}`;
    const entries = Array.from({ length: perNode }, (_, i) => ({
      name: `team-${i % 20}/sb-${n}-${i}`,
      id: `sb_${n.toString(16)}${i.toString(16).padStart(8, '0')}`,
      phase: 'Running',
      claimRef: `team-${i % 20}/sb-${n}-${i}`,
      addr: `10.${n}.${(i >> 8) & 255}.${i & 255}:7777`,
      deadline: '2030-01-01T00:00:00Z',
      claimedAt: '2026-01-01T00:00:00Z',
    }));
    for (const e of entries) names.push(e.name);
    await applyObject(
      kc,
      {
        apiVersion: EXTENSIONS_API_VERSION,
        kind: RESOURCES.nodeInventory.kind,
        metadata: { name: node },
        node,
        address: '127.0.0.1:1',
        entries,
      },
      { fieldManager: 'bench', force: true, resource: RESOURCES.nodeInventory },
    );
  }
  return names;
}

/** One NodeInventory per simulated node from what its sandboxd reports, built by the publisher's own buildInventory. */
/** Throws until every pool of every node holds its target of warm VMs. */
async function warmPoolsFull(sim: Sim): Promise<void> {
  for (const n of sim.nodes) {
    const client = new SandboxdClient({ baseUrl: n.url, token: TOKEN });
    try {
      const short = (await client.info()).pools.filter((p) => p.warm < p.target);
      if (short.length > 0) throw new Error(`${n.name}: ${short.length} pools still refilling`);
    } finally {
      await client.close();
    }
  }
}

async function publishSim(kc: KubeConfig, sim: Sim): Promise<void> {
  for (const n of sim.nodes) {
    const client = new SandboxdClient({ baseUrl: n.url, token: TOKEN });
    const [rows, info] = await Promise.all([client.sandboxes(), client.info()]);
    await client.close();
    await applyObject(kc, buildInventory({ node: `sim-${n.name}`, address: n.addr, rows, info, now: new Date() }), {
      fieldManager: 'bench',
      force: true,
      resource: RESOURCES.nodeInventory,
    });
  }
}

/** p50 of sequential GETs of names picked evenly from the fleet, after a short warm-up. */
async function timeGets(api: Client, names: readonly string[]): Promise<{ p50: number; failed: number }> {
  const path = (i: number): string => {
    const [ns = '', name = ''] = (names[(i * 7919) % names.length] ?? '').split('/');
    return `${BASE}/namespaces/${ns}/sandboxes/${name}`;
  };
  for (let i = 0; i < 50; i++) await api('GET', path(i));
  const times: number[] = [];
  let failed = 0;
  for (let i = 0; i < GETS; i++) {
    const t0 = performance.now();
    const r = await api('GET', path(i + 50));
    times.push(performance.now() - t0);
    if (r.status !== 200) failed++;
  }
  return { p50: p50(times), failed };
}

async function main(): Promise<void> {
  const cp = await startControlPlane({ controllerManager: false });
  const kubectl = (args: string[]) =>
    run(join(cp.binDir, 'kubectl'), args, { env: { ...process.env, KUBECONFIG: cp.kubeconfigPath }, maxBuffer: 1 << 30 });
  let sim: Sim | undefined;
  try {
    await applyCrds(cp.kubeConfig, 'charts/sandbox-scale/crds');
    const small = await writeFleet(cp.kubeConfig, SMALL);
    // speed 0 and a pool deeper than the creates: every create is a warm hit, so the figures are the API path
    sim = await startSim({
      nodes: SIM_NODES,
      speed: 0,
      token: TOKEN,
      refillConcurrency: 256,
      pools: [{ template: IMAGE, warm: Math.ceil((CREATES * 1.2) / SIM_NODES) + 8 }],
    });
    for (const n of sim.nodes) sim.node(n.name).tick();
    const started = sim;
    await eventually(() => warmPoolsFull(started), { timeoutMs: 60_000 });
    await publishSim(cp.kubeConfig, sim);

    const cert = await writeServingCert('bench-get');
    const port = await freePort();
    const server = await startBenchApiserver(cp.kubeConfig, cert, port, TOKEN);
    const api = await httpsClient(cp.kubeConfig, 1);
    await registerApiService(kubectl, api, { name: 'bench-get', port, caCert: cert.caCert });

    const atSmall = await timeGets(api, small);
    const large = await writeFleet(cp.kubeConfig, LARGE);
    const [lastNs = '', lastName = ''] = (large[large.length - 1] ?? '').split('/');
    await eventually(
      async () => {
        if ((await api('GET', `${BASE}/namespaces/${lastNs}/sandboxes/${lastName}`)).status !== 200)
          throw new Error('the large fleet never reached the server');
      },
      { timeoutMs: 60_000 },
    );
    const atLarge = await timeGets(api, large);

    let ok = 0;
    const createMs: number[] = [];
    const failures = new Map<string, number>();
    const fail = (step: string, r: Reply): void => {
      const reason = (JSON.parse(r.body || '{}') as { reason?: string }).reason ?? '';
      const k = `${step} ${r.status} ${reason}`;
      failures.set(k, (failures.get(k) ?? 0) + 1);
    };
    for (let i = 0; i < CREATES; i++) {
      const name = `rac-${i}`;
      const body = {
        apiVersion: 'agents.x-k8s.io/v1beta1',
        kind: 'Sandbox',
        metadata: { name },
        spec: { podTemplate: { spec: { containers: [{ name: 'main', image: IMAGE }] } } },
      };
      const t0 = performance.now();
      const created = await api('POST', `${BASE}/namespaces/bench/sandboxes`, body);
      createMs.push(performance.now() - t0);
      if (created.status !== 201) {
        fail('create', created);
        continue;
      }
      const got = await api('GET', `${BASE}/namespaces/bench/sandboxes/${name}`);
      if (got.status !== 200) {
        fail('get', got);
        continue;
      }
      const paused = await api('POST', `${BASE}/namespaces/bench/sandboxes/${name}/pause`, {});
      if (paused.status !== 201) {
        fail('pause', paused);
        continue;
      }
      ok++;
    }
    await server.stop();

    const ratio = atLarge.p50 / Math.max(atSmall.p50, 1e-9);
    const round = (x: number): number => Number(x.toFixed(3));
    console.log(`get p50 at ${small.length} (ms)      ${atSmall.p50.toFixed(2)}   (${GETS} gets, ${atSmall.failed} failed)`);
    console.log(`get p50 at ${large.length} (ms)    ${atLarge.p50.toFixed(2)}   (${GETS} gets, ${atLarge.failed} failed)`);
    console.log(`ratio                    ${ratio.toFixed(2)}`);
    console.log(`create→get→pause ok      ${ok} / ${CREATES}   create p50 ${p50(createMs).toFixed(1)} ms`);
    for (const [k, n] of failures) console.log(`  failed: ${k} x${n}`);
    console.log(
      JSON.stringify({
        ratio: round(ratio),
        read_after_create: round(ok / CREATES),
        get_p50_1k_ms: round(atSmall.p50),
        get_p50_100k_ms: round(atLarge.p50),
        sandboxes_small: small.length,
        sandboxes_large: large.length,
        creates: CREATES,
        create_p50_ms: round(p50(createMs)),
      }),
    );
  } finally {
    await sim?.stop();
    await cp.stop();
  }
}

runBench(main);
