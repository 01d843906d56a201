/**
 * What one orphan pass of claim-controller costs at fleet scale: apiserver requests and
 * sandboxd requests per steady-state pass and per pass with N changes, for 50,000 live
 * sandboxes over 20 simulated nodes, on a control plane started here. Prints a table, then ONE
 * JSON line. Nothing passes or fails on time; a pass whose request counts exceed the goal
 * (sandboxd ≤ nodes + changes, apiserver reads ≤ changes, a steady pass no apiserver request)
 * fails the run.
 *
 *   npx nx run bench:orphan-pass
 *
 * The fleet: ORPHAN_CLAIMS SandboxClaims Bound to their deliveries (created in etcd: a create
 * and a status apply each), the rest deliveries of aggregated-API Sandboxes (no SandboxClaim).
 * Changes: half SandboxClaims whose record was lost, half fast-path deliveries whose claim was
 * never written. Requests are counted where they land or leave: the nodes' own request
 * counters (sandboxd_sim_requests_total) and every request made with the pass's kubeconfig.
 * "before" re-runs the previous pass's algorithm on the same fleet (every row's token read
 * back, a live Get per claim delivery), steady state only.
 */
import {
  ClaimGateway,
  ClaimRecorder,
  ClaimClient,
  createCaches,
  createOrphanPass,
  FastPathRecorder,
  SecretAccess,
  selfSubjectReviewer,
} from '@sandbox-scale/claim-controller';
import { applyCrds, countingKubeConfig, startControlPlane } from '@sandbox-scale/e2e';
import { applyStatus, createLogger, ResourceClient } from '@sandbox-scale/kube-runtime';
import { SandboxdClientSet } from '@sandbox-scale/sandboxd-client';
import { startSim, type Sim } from '@sandbox-scale/sandboxd-sim';
import {
  EXTENSIONS_API_VERSION,
  FIELD_MANAGERS,
  formatOwnerRef,
  OWNER_KINDS,
  parseOwnerRef,
  RESOURCES,
  type InventoryLike,
  OwnerRefKey,
} from '@sandbox-scale/scale-core';
import { applyObject } from '@sandbox-scale/kube-runtime';
import { randomUUID, randomBytes } from 'node:crypto';
import { Registry } from 'prom-client';
import { createBasePool } from './base-pool';
import { runBench } from './run-bench';

/** The key every process of this run proves claim references with. */
const CLAIM_REF_KEY = new OwnerRefKey(randomBytes(32));

const SANDBOXES = Number(process.env.ORPHAN_SANDBOXES ?? 50_000);
const NODES = Number(process.env.ORPHAN_NODES ?? 20);
const CLAIMS = Math.min(SANDBOXES, Number(process.env.ORPHAN_CLAIMS ?? 10_000));
const CHANGES = Number(process.env.ORPHAN_CHANGES ?? 20);
const STEADY_PASSES = 3;
const CONCURRENCY = 32;
const TOKEN = 'bench-root-token';
const IMAGE = 'registry.local/orphan-bench:1';
const NS = 'bench';
const TTL = 86_400;
const Claims = RESOURCES.sandboxClaim;

async function pool(n: number, work: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) await work(next++);
    }),
  );
}

/** Requests the nodes served, every route but /metrics. */
function sandboxdRequests(sim: Sim): number {
  let total = 0;
  for (const n of sim.nodes) for (const [k, v] of sim.node(n.name).state.metrics.requests) if (k !== 'GET /metrics') total += v;
  return total;
}

interface PassCost {
  apiserver: number;
  apiserverReads: number;
  sandboxd: number;
  ms: number;
  adopted: number;
}

async function main(): Promise<void> {
  const log = createLogger({ name: 'bench-orphan-pass', level: process.env.LOG_LEVEL ?? 'error' });
  const cp = await startControlPlane({ controllerManager: false });
  const kc = cp.kubeConfig;
  const sim = await startSim({ nodes: NODES, speed: 0, token: TOKEN });
  const clients = new SandboxdClientSet({ token: TOKEN });
  try {
    await applyCrds(kc, 'charts/sandbox-scale/crds');
    await new ResourceClient(kc, { group: '', version: 'v1', plural: 'namespaces', kind: 'Namespace', namespaced: false }).create(
      undefined,
      { metadata: { name: NS } },
    );
    for (const n of sim.nodes) {
      await applyObject(
        kc,
        { apiVersion: EXTENSIONS_API_VERSION, kind: 'NodeInventory', metadata: { name: n.name }, node: n.name, address: n.addr, pools: [] },
        { fieldManager: 'bench', force: true, resource: RESOURCES.nodeInventory },
      );
    }
    await createBasePool(kc, NS, IMAGE, 0);
    const claims = new ResourceClient(kc, Claims);
    const createClaim = async (name: string): Promise<{ metadata: { uid: string } }> =>
      (await claims.create(NS, {
        apiVersion: EXTENSIONS_API_VERSION,
        kind: 'SandboxClaim',
        metadata: { name },
        spec: { warmPoolRef: { name: 'base' } },
      })) as { metadata: { uid: string } };
    const nodeOf = (i: number) => sim.node(sim.nodes[i % NODES]?.name ?? '');
    const deliver = async (i: number, claimRef: string): Promise<string> => {
      const out = await nodeOf(i).claimLocal({ template: IMAGE, ttl_seconds: TTL, claim_ref: claimRef, no_redirect: true });
      if (out.kind !== 'claim') throw new Error(`node ${nodeOf(i).name} did not deliver: ${out.kind}`);
      return out.sandbox.id;
    };

    // The fleet. Claims first: create, deliver under its uid, record Bound (no Secret: the pass never reads one).
    const tFleet = performance.now();
    await pool(CLAIMS, async (i) => {
      const name = `c-${i}`;
      const created = await createClaim(name);
      const id = await deliver(
        i,
        formatOwnerRef({ kind: OWNER_KINDS.claim, uid: created.metadata.uid, namespace: NS, name }, CLAIM_REF_KEY),
      );
      const node = nodeOf(i);
      const now = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
      const bound = {
        status: 'True',
        reason: 'NodeLocalClaim',
        message: `node ${node.name} handed over sandbox ${id}`,
        lastTransitionTime: now,
      };
      await applyStatus(
        kc,
        {
          apiVersion: EXTENSIONS_API_VERSION,
          kind: 'SandboxClaim',
          metadata: { name, namespace: NS },
          status: {
            sandbox: { name, claimID: id, nodeName: node.name, address: node.addr },
            conditions: [
              { type: 'Bound', ...bound },
              { type: 'Ready', ...bound },
            ],
          },
        },
        { fieldManager: FIELD_MANAGERS.claimController, force: true, resource: Claims },
      );
    });
    const claimsS = (performance.now() - tFleet) / 1000;
    for (let i = CLAIMS; i < SANDBOXES; i++)
      await deliver(i, formatOwnerRef({ kind: OWNER_KINDS.sandbox, uid: randomUUID(), namespace: NS, name: `sb-${i}` }, CLAIM_REF_KEY));
    const fleetS = (performance.now() - tFleet) / 1000;

    // The pass, wired as start-claim-controller wires it, over a counting kubeconfig.
    const counted = countingKubeConfig(kc);
    const caches = createCaches(counted.kubeConfig, log, new Registry());
    for (const c of Object.values(caches)) c.start();
    await Promise.all(Object.values(caches).map((c) => c.waitForSync()));
    const inventories = (): readonly InventoryLike[] => caches.inventories.list();
    const gateway = new ClaimGateway({ refKey: CLAIM_REF_KEY, clients, fleetToken: TOKEN, inventories, log, callTimeoutMs: 60_000 });
    const recorder = new ClaimRecorder({ kubeConfig: counted.kubeConfig });
    const writes = new ClaimClient(counted.kubeConfig);
    const fastPath = new FastPathRecorder(counted.kubeConfig, recorder);
    const secretAccess = new SecretAccess({ review: selfSubjectReviewer(counted.kubeConfig) });
    const orphans = createOrphanPass(caches, {
      gateway,
      recorder,
      fastPath,
      inventories,
      claims: writes,
      refKey: CLAIM_REF_KEY,
      secretAccess,
      intervalMs: 3_600_000,
      log,
    });

    const measure = async (run: () => Promise<number>): Promise<PassCost> => {
      counted.reset();
      const s0 = sandboxdRequests(sim);
      const t0 = performance.now();
      const adopted = await run();
      const ms = performance.now() - t0;
      const routes = counted.byRoute();
      const reads = [...routes].filter(([k]) => k.startsWith('GET ')).reduce((a, [, v]) => a + v, 0);
      return { apiserver: counted.total(), apiserverReads: reads, sandboxd: sandboxdRequests(sim) - s0, ms, adopted };
    };
    const newPass = async (): Promise<number> => (await orphans.reconcileAll()).adopted;
    /** The previous pass, steady state: every row's token read back (concurrently per node), then a live Get per claim delivery. */
    const beforePass = async (): Promise<number> => {
      for (const inv of inventories()) {
        const rows = await gateway.listDeliveries(inv);
        const withTokens = await Promise.all(rows.map((d) => gateway.withToken(d)));
        for (const d of withTokens) {
          const owner = parseOwnerRef(d.claimRef);
          if (owner === undefined || (owner.kind !== OWNER_KINDS.claim && owner.kind !== OWNER_KINDS.fastclaim)) continue;
          await writes.get(owner.namespace, owner.name).catch(() => undefined);
        }
      }
      return 0;
    };

    const steady: PassCost[] = [];
    for (let i = 0; i < STEADY_PASSES; i++) steady.push(await measure(newPass));
    const before = await measure(beforePass);

    // N changes: half claims whose record was lost, half fast-path deliveries whose claim was never written.
    const lost = Math.ceil(CHANGES / 2);
    for (let i = 0; i < lost; i++) {
      const name = `lost-${i}`;
      const created = await createClaim(name);
      await deliver(i, formatOwnerRef({ kind: OWNER_KINDS.claim, uid: created.metadata.uid, namespace: NS, name }, CLAIM_REF_KEY));
    }
    for (let i = lost; i < CHANGES; i++)
      await deliver(i, formatOwnerRef({ kind: OWNER_KINDS.fastclaim, uid: randomUUID(), namespace: NS, name: `fast-${i}` }, CLAIM_REF_KEY));
    for (const t0 = Date.now(); Array.from({ length: lost }, (_, i) => caches.claims.get(NS, `lost-${i}`)).some((c) => c === undefined);) {
      if (Date.now() - t0 > 60_000) throw new Error('the claim cache did not see the new claims');
      await new Promise((r) => setTimeout(r, 50));
    }
    const changed = await measure(newPass);
    if (changed.adopted !== CHANGES) throw new Error(`the pass adopted ${changed.adopted} of ${CHANGES} changes`);

    const avg = (k: keyof PassCost): number => steady.reduce((a, p) => a + p[k], 0) / steady.length;
    const result = {
      sandboxes: SANDBOXES,
      nodes: NODES,
      bound_claims: CLAIMS,
      aggregated_api_sandboxes: SANDBOXES - CLAIMS,
      steady_apiserver_requests: Math.max(...steady.map((p) => p.apiserver)),
      steady_sandboxd_requests: Math.max(...steady.map((p) => p.sandboxd)),
      changes: CHANGES,
      changed_apiserver_requests: changed.apiserver,
      changed_apiserver_reads: changed.apiserverReads,
      changed_apiserver_record_writes: changed.apiserver - changed.apiserverReads,
      changed_sandboxd_requests: changed.sandboxd,
      pass_ms: +avg('ms').toFixed(1),
      changed_pass_ms: +changed.ms.toFixed(1),
      before_steady_apiserver_requests: before.apiserver,
      before_steady_sandboxd_requests: before.sandboxd,
      before_pass_ms: +before.ms.toFixed(1),
      fleet_setup_s: +fleetS.toFixed(1),
      claims_setup_s: +claimsS.toFixed(1),
    };
    console.log(
      `orphan pass: ${SANDBOXES} live sandboxes over ${NODES} nodes (${CLAIMS} Bound SandboxClaims, ${SANDBOXES - CLAIMS} aggregated-API Sandboxes); fleet built in ${result.fleet_setup_s} s`,
    );
    console.table([
      {
        pass: 'steady (this pass)',
        apiserver: result.steady_apiserver_requests,
        sandboxd: result.steady_sandboxd_requests,
        'goal ≤ nodes + changes': NODES,
        ms: result.pass_ms,
      },
      {
        pass: `${CHANGES} changes (this pass)`,
        apiserver: `${changed.apiserver} (${changed.apiserverReads} reads + ${result.changed_apiserver_record_writes} record writes)`,
        sandboxd: changed.sandboxd,
        'goal ≤ nodes + changes': NODES + CHANGES,
        ms: result.changed_pass_ms,
      },
      {
        pass: 'steady (before)',
        apiserver: before.apiserver,
        sandboxd: before.sandboxd,
        'goal ≤ nodes + changes': NODES,
        ms: result.before_pass_ms,
      },
    ]);
    await Promise.all(Object.values(caches).map((c) => c.stop()));
    console.log(JSON.stringify(result));
    // Counts, not times: a pass over the goal fails the run (the records themselves are the writes a change needs).
    const overGoal = [
      result.steady_sandboxd_requests > NODES && `steady pass: ${result.steady_sandboxd_requests} sandboxd requests > ${NODES} nodes`,
      result.steady_apiserver_requests > 0 && `steady pass: ${result.steady_apiserver_requests} apiserver requests > 0`,
      result.changed_sandboxd_requests > NODES + CHANGES &&
        `pass with changes: ${result.changed_sandboxd_requests} sandboxd requests > ${NODES} nodes + ${CHANGES} changes`,
      result.changed_apiserver_reads > CHANGES &&
        `pass with changes: ${result.changed_apiserver_reads} apiserver reads > ${CHANGES} changes`,
    ].filter((m): m is string => typeof m === 'string');
    if (overGoal.length > 0) throw new Error(`orphan pass over its goal (≤ nodes + changes): ${overGoal.join('; ')}`);
  } finally {
    await clients.close();
    await sim.stop();
    await cp.stop();
  }
}

runBench(main);
