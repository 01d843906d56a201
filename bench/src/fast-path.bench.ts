/**
 * The fast path as a user meets it: a kept-alive HTTPS client with a ServiceAccount token (for
 * the fast path's audience) calls POST /v1/claims on the running claim-controller (its own
 * process, under the chart's ServiceAccount), against a direct claim on a sandboxd-sim node in
 * the same run, and against the floor of any fast path written in Node on this machine
 * (fast-path-floor.ts: its own process, the same two hops and encodings, none of the fast path's
 * logic), the three taken in turn, each first as often as last, so none always gets another's GC
 * or refill. Then 64 concurrent callers for throughput, of the floor and of the fast path, two
 * bursts each in the order floor, fast, fast, floor, each burst started quiet: every earlier
 * claim's record landed and every node's pools refilled (no burst pays for another's records or
 * refill). Every fast-path claim's SandboxClaim record counted.
 * The first call (identity and authorization not cached yet) is reported on its own, with the
 * second, and the TokenReviews and SubjectAccessReviews kube-apiserver served (its
 * apiserver_request_total) for those two and during the timed claims: a repeat caller's claims
 * make none but the background renewals. The claim-controller's CPU per timed claim (its own
 * process_cpu_seconds_total, from the first timed claim until every record landed) is printed as
 * the steadier figure. The machine is shared: the 1-minute load average is
 * printed with the figures. Prints a table, then ONE JSON line (the last line). Figures only:
 * nothing passes or fails on time.
 *
 *   npx nx run bench:fast-path            (FAST_PATH_N=100 FAST_PATH_BURST=500 for a shorter run)
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { Agent, request } from 'node:https';
import { loadavg } from 'node:os';
import { CoreV1Api, CustomObjectsApi, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { eventually, serviceAccountToken } from '@sandbox-scale/e2e';
import { toolPath } from '../../e2e/src/control-plane/tools';
import { runCommand } from '../../e2e/src/system/run-command';
import { samples } from '../../e2e/src/testing/metric-names';
import { startLocalSystem } from '../../e2e/src/system/local-system';
import { normalizeBaseUrl, SandboxdClientSet } from '@sandbox-scale/sandboxd-client';
import { API_VERSION, EXTENSIONS_API_VERSION, EXTENSIONS_GROUP, FAST_PATH_AUDIENCE, RESOURCES } from '@sandbox-scale/scale-core';
import { runBench } from './run-bench';

const N = Number(process.env.FAST_PATH_N ?? 1_000);
const BURST = Number(process.env.FAST_PATH_BURST ?? 2_000);
const CONCURRENCY = 64;
const WARMUP = 50;
const NS = 'bench-fast';
const POOL = 'base';
const IMAGE = 'registry.local/bench:1';
// every fast-path claim (the first two, the warm-up, the timed ones, both bursts) stays held until
// the end (its record is counted); a floor burst's claims are released after it
const REPLICAS = 2 + WARMUP + N + 3 * BURST + 200;

function pct(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
}

interface Answer {
  code: number;
  body: string;
}

function post(url: URL, agent: Agent, ca: string, token: string, body: unknown): Promise<Answer> {
  const text = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent,
        ca,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ code: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

interface Floor {
  url: URL;
  ca: string;
  stop: () => void;
}

/** Starts the fast-path floor (fast-path-floor.ts) as its own process, claiming at `nodes` in turn. */
async function startFloor(nodes: readonly { url: string; token: string }[]): Promise<Floor> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/src/fast-path-floor.ts'], {
    env: { ...process.env, FLOOR_NODES: nodes.map((n) => n.url).join(','), FLOOR_TOKENS: nodes.map((n) => n.token).join(',') },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) => reject(new Error(`the fast-path floor exited (${code}) before it listened`))),
  );
  const lines = createInterface({ input: child.stdout });
  const first = new Promise<string>((resolve) => lines.once('line', resolve));
  const { port, ca } = JSON.parse(await Promise.race([first, exited])) as { port: number; ca: string };
  return { url: new URL(`https://127.0.0.1:${port}/v1/claims`), ca, stop: () => child.kill('SIGTERM') };
}

/** TokenReviews and SubjectAccessReviews the API server has answered so far (its own request counter). */
async function reviewsServed(binDir: string, kubeconfig: string): Promise<number> {
  try {
    const page = await runCommand(toolPath(binDir, 'kubectl'), ['get', '--raw', '/metrics'], { KUBECONFIG: kubeconfig });
    return samples(page, 'apiserver_request_total')
      .filter((s) => s.labels.resource === 'tokenreviews' || s.labels.resource === 'subjectaccessreviews')
      .reduce((sum, s) => sum + s.value, 0);
  } catch (err) {
    // a figure missing is reported as such (NaN, null in the JSON), never the run lost
    console.error(`kube-apiserver /metrics not read: ${(err as Error).message}`);
    return NaN;
  }
}

/** CPU seconds the claim-controller process has used (its process_cpu_seconds_total); NaN when not read. */
async function controllerCpuSeconds(metricsUrl: string | undefined): Promise<number> {
  if (metricsUrl === undefined) return NaN;
  try {
    const page = await (await fetch(metricsUrl)).text();
    return samples(page, 'process_cpu_seconds_total')[0]?.value ?? NaN;
  } catch (err) {
    console.error(`claim-controller /metrics not read: ${(err as Error).message}`);
    return NaN;
  }
}

async function main(): Promise<void> {
  const sys = await startLocalSystem({
    nodes: 2,
    speed: 0,
    examples: false,
    publishInterval: '1s',
    // the controller's /metrics, for its CPU per claim; read over plain HTTP without a token
    // (--metrics-auth=none): the bench measures claims, not the scrape's TokenReview
    metrics: true,
    // the pool is filled before anything is timed: at the simulator's automatic refill
    // concurrency (a few clones per 2 s tick) its 3,252 VMs took 13 minutes
    // the pool holds every claim of the run (thousands): over warmpool-driver's default per-pool
    // limit, which the bench lifts (0: no limit)
    extraArgs: {
      'sandboxd-sim': ['--refill-concurrency', '256'],
      'claim-controller': ['--metrics-auth', 'none'],
      'warmpool-driver': ['--max-replicas-per-pool', '0', '--max-replicas-per-namespace', '0'],
    },
    beforeInstall: async (kc) => {
      await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NS } } });
    },
  });
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const floorAgent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  // straight to the nodes, each with its own root token (the system runs per-node tokens)
  const tokenOf = new Map(sys.nodes.map((n) => [normalizeBaseUrl(n.url), n.token]));
  const clients = new SandboxdClientSet({ tokenFor: (url) => tokenOf.get(normalizeBaseUrl(url)) ?? '' });
  const floorServer = await startFloor(sys.nodes);
  try {
    const kc = sys.kubeConfig;
    const custom = kc.makeApiClient(CustomObjectsApi);
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    await kc.makeApiClient(CoreV1Api).createNamespacedServiceAccount({ namespace: NS, body: { metadata: { name: 'client' } } });
    await rbac.createNamespacedRole({
      namespace: NS,
      body: {
        metadata: { name: 'client' },
        rules: [{ apiGroups: [EXTENSIONS_GROUP], resources: [RESOURCES.sandboxClaim.plural], verbs: ['create'] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: NS,
      body: {
        metadata: { name: 'client' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'client' },
        subjects: [{ kind: 'ServiceAccount', name: 'client', namespace: NS }],
      },
    });
    const token = await serviceAccountToken(kc, NS, 'client', [FAST_PATH_AUDIENCE]);
    const ca = readFileSync(sys.servingCaPath, 'utf8');
    await custom.createNamespacedCustomObject({
      group: EXTENSIONS_GROUP,
      version: API_VERSION,
      namespace: NS,
      plural: RESOURCES.sandboxTemplate.plural,
      body: {
        apiVersion: EXTENSIONS_API_VERSION,
        kind: 'SandboxTemplate',
        metadata: { name: POOL },
        spec: { podTemplate: { spec: { containers: [{ name: 'main', image: IMAGE }] } } },
      },
    });
    await custom.createNamespacedCustomObject({
      group: EXTENSIONS_GROUP,
      version: API_VERSION,
      namespace: NS,
      plural: RESOURCES.sandboxWarmPool.plural,
      body: {
        apiVersion: EXTENSIONS_API_VERSION,
        kind: 'SandboxWarmPool',
        metadata: { name: POOL },
        spec: { replicas: REPLICAS, sandboxTemplateRef: { name: POOL } },
      },
    });
    await eventually(
      async () => {
        const pool = (await custom.getNamespacedCustomObject({
          group: EXTENSIONS_GROUP,
          version: API_VERSION,
          namespace: NS,
          plural: RESOURCES.sandboxWarmPool.plural,
          name: POOL,
        })) as { status?: { readyReplicas?: number } };
        if ((pool.status?.readyReplicas ?? 0) < REPLICAS) throw new Error(`pool ready ${pool.status?.readyReplicas ?? 0}/${REPLICAS}`);
      },
      { timeoutMs: 900_000, intervalMs: 500 },
    );

    const url = new URL(`${sys.fastPathUrl}/v1/claims`);
    const node = sys.nodes[0];
    if (!node) throw new Error('no node');
    const direct = clients.forNode(node.url);
    const fastNames: string[] = [];
    const fast = async (name: string): Promise<number> => {
      const t0 = performance.now();
      const a = await post(url, agent, ca, token, { namespace: NS, name, warmPool: POOL });
      const ms = performance.now() - t0;
      if (a.code !== 200) throw new Error(`POST /v1/claims ${name}: ${a.code} ${a.body}`);
      fastNames.push(name);
      return ms;
    };
    // the floor's claims, by the node that answered: the sequential ones are released as the
    // direct ones are, the burst's are held to the end
    const floorHeld: { node: string; id: string }[] = [];
    const floor = async (name: string): Promise<number> => {
      const t0 = performance.now();
      const a = await post(floorServer.url, floorAgent, floorServer.ca, token, { namespace: NS, name, template: IMAGE });
      const ms = performance.now() - t0;
      if (a.code !== 200) throw new Error(`floor POST /v1/claims ${name}: ${a.code} ${a.body}`);
      const { node, claimId } = JSON.parse(a.body) as { node: string; claimId: string };
      floorHeld.push({ node, id: claimId });
      return ms;
    };
    const directIds: string[] = [];
    const claimDirect = async (i: number): Promise<number> => {
      const t0 = performance.now();
      const d = await direct.claim({ template: IMAGE, net: 'none', size: 'small', ttlSeconds: 3600, claimRef: `bench/d-${i}` });
      const ms = performance.now() - t0;
      directIds.push(d.id);
      return ms;
    };

    // the first call: TokenReview, SubjectAccessReview and the namespace's Secret access not cached yet
    const reviewsBefore = await reviewsServed(sys.controlPlane.binDir, sys.kubeconfigPath);
    const firstMs = await fast('first');
    const secondMs = await fast('second');
    const reviewsFirst = (await reviewsServed(sys.controlPlane.binDir, sys.kubeconfigPath)) - reviewsBefore;
    for (let i = 0; i < WARMUP; i++) {
      await fast(`warm-${i}`);
      await claimDirect(-1 - i);
      await floor(`warm-${i}`);
    }
    // sequential, the three in turn and each order's first moved on every round: fast, direct,
    // floor; direct, floor, fast; floor, fast, direct; ...
    const loadAtStart = loadavg()[0] ?? NaN;
    const reviewsTimed0 = await reviewsServed(sys.controlPlane.binDir, sys.kubeconfigPath);
    const controllerMetrics = sys.metricsUrls.get('claim-controller');
    const cpuTimed0 = await controllerCpuSeconds(controllerMetrics);
    const timedT0 = performance.now();
    const fs: number[] = [];
    const ds: number[] = [];
    const fls: number[] = [];
    const paths = [
      async (i: number) => fs.push(await fast(`seq-${i}`)),
      async (i: number) => ds.push(await claimDirect(i)),
      async (i: number) => fls.push(await floor(`seq-${i}`)),
    ];
    for (let i = 0; i < N; i++) {
      for (let k = 0; k < paths.length; k++) await paths[(i + k) % paths.length]?.(i);
      // keep the nodes' live sets flat for the direct and floor claims, outside the timed window
      const id = directIds.pop();
      if (id) await direct.release(id);
      const f = floorHeld.pop();
      if (f) await clients.forNode(f.node).release(f.id);
    }
    fs.sort((a, b) => a - b);
    ds.sort((a, b) => a - b);
    fls.sort((a, b) => a - b);

    // every fast-path claim so far with its SandboxClaim, Bound, written asynchronously; how
    // many have landed (all of them, unless the wait ran out)
    const recordsLanded = async (want: ReadonlySet<string>): Promise<number> => {
      let landed = 0;
      await eventually(
        async () => {
          const list = (await custom.listNamespacedCustomObject({
            group: EXTENSIONS_GROUP,
            version: API_VERSION,
            namespace: NS,
            plural: RESOURCES.sandboxClaim.plural,
          })) as { items: { metadata: { name: string }; status?: { sandbox?: { name?: string } } }[] };
          landed = list.items.filter((c) => want.has(c.metadata.name) && (c.status?.sandbox?.name ?? '') !== '').length;
          if (landed < want.size) throw new Error(`${landed}/${want.size} records landed`);
        },
        { timeoutMs: 300_000, intervalMs: 500 },
      ).catch(() => undefined);
      return landed;
    };
    // every node's pools back at their target, nothing refilling
    const poolsFull = (): Promise<void> =>
      eventually(
        async () => {
          for (const n of sys.nodes) {
            const info = await clients.forNode(n.url).info();
            const short = info.pools.find((p) => p.warm < p.target || p.refilling > 0);
            if (short) throw new Error(`${n.name}: ${short.key.template} warm ${short.warm}/${short.target}, ${short.refilling} refilling`);
          }
        },
        { timeoutMs: 300_000, intervalMs: 200 },
      );
    // concurrency 64: throughput of a whole path, started quiet (every earlier record landed,
    // every pool refilled)
    const burst = async (claim: (name: string) => Promise<number>, prefix: string): Promise<number> => {
      await recordsLanded(new Set(fastNames));
      await poolsFull();
      let next = 0;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < BURST) {
            const i = next++;
            await claim(`${prefix}-${i}`);
          }
        }),
      );
      return (performance.now() - t0) / 1000;
    };
    // a floor burst's claims go back to their nodes before the next burst, outside its window
    const releaseFloorClaims = async (): Promise<void> => {
      for (const f of floorHeld.splice(0)) await clients.forNode(f.node).release(f.id);
    };
    const floorBurst1S = await burst(floor, 'floor-burst-1');
    await releaseFloorClaims();
    const burst1S = await burst(fast, 'burst-1');
    const burst2S = await burst(fast, 'burst-2');
    // every fast-path claim has been made: each gets its SandboxClaim, Bound, written asynchronously
    const want = new Set(fastNames);
    const recordT0 = performance.now();
    const landed = await recordsLanded(want);
    const recordS = (performance.now() - recordT0) / 1000;
    const floorBurst2S = await burst(floor, 'floor-burst-2');
    await releaseFloorClaims();
    const burstS = burst1S + burst2S;
    const floorBurstS = floorBurst1S + floorBurst2S;
    const claimsPerS = (2 * BURST) / burstS;
    const floorPerS = (2 * BURST) / floorBurstS;
    const timedS = (performance.now() - timedT0) / 1000;
    const reviewsTimed = (await reviewsServed(sys.controlPlane.binDir, sys.kubeconfigPath)) - reviewsTimed0;
    const loadAtEnd = loadavg()[0] ?? NaN;

    // the controller's CPU per fast-path claim, its record included: steadier than latency on a
    // shared machine (what the process did, not how long it waited for a core)
    const cpuMsPerClaim = (((await controllerCpuSeconds(controllerMetrics)) - cpuTimed0) * 1000) / (N + 2 * BURST);

    const f50 = pct(fs, 50);
    const d50 = pct(ds, 50);
    const fl50 = pct(fls, 50);
    console.log('path         p50 ms   p99 ms');
    console.log(`fast path  ${f50.toFixed(3).padStart(8)} ${pct(fs, 99).toFixed(3).padStart(8)}`);
    console.log(`direct     ${d50.toFixed(3).padStart(8)} ${pct(ds, 99).toFixed(3).padStart(8)}`);
    console.log(
      `floor      ${fl50.toFixed(3).padStart(8)} ${pct(fls, 99).toFixed(3).padStart(8)}   (two hops in Node, no fast-path logic)`,
    );
    console.log(
      `ratios p50: fast/direct ${(f50 / d50).toFixed(2)}, floor/direct ${(fl50 / d50).toFixed(2)}, fast/floor ${(f50 / fl50).toFixed(2)}`,
    );
    console.log(`first call ${firstMs.toFixed(3).padStart(8)}   (${reviewsFirst} TokenReview/SubjectAccessReview for the first two calls)`);
    console.log(`second call${secondMs.toFixed(3).padStart(8)}`);
    console.log(
      `reviews during the ${N + 2 * BURST} timed claims (${timedS.toFixed(1)} s): ${reviewsTimed} (background renewals of cached answers only)`,
    );
    console.log(`load average (1 min) ${loadAtStart.toFixed(2)} at the start of the timed runs, ${loadAtEnd.toFixed(2)} at their end`);
    console.log(
      `concurrency ${CONCURRENCY}: 2 x ${BURST} claims in ${burst1S.toFixed(2)} + ${burst2S.toFixed(2)} s = ${claimsPerS.toFixed(0)} claims/s`,
    );
    console.log(
      `concurrency ${CONCURRENCY}, floor: 2 x ${BURST} claims in ${floorBurst1S.toFixed(2)} + ${floorBurst2S.toFixed(2)} s = ${floorPerS.toFixed(0)} claims/s (fast path ${((claimsPerS / floorPerS) * 100).toFixed(0)} % of it)`,
    );
    console.log(`records: ${landed}/${want.size} SandboxClaims Bound, the last ${recordS.toFixed(1)} s after the fast path's last burst`);
    console.log(`claim-controller CPU: ${cpuMsPerClaim.toFixed(3)} ms per timed fast-path claim, its record included`);
    console.log(
      JSON.stringify({
        fast_p50_ms: +f50.toFixed(3),
        fast_p99_ms: +pct(fs, 99).toFixed(3),
        direct_p50_ms: +d50.toFixed(3),
        direct_p99_ms: +pct(ds, 99).toFixed(3),
        ratio_p50: +(f50 / d50).toFixed(3),
        claims_per_s: +claimsPerS.toFixed(1),
        floor_p50_ms: +fl50.toFixed(3),
        floor_p99_ms: +pct(fls, 99).toFixed(3),
        floor_ratio_p50: +(fl50 / d50).toFixed(3),
        fast_over_floor_p50: +(f50 / fl50).toFixed(3),
        floor_claims_per_s: +floorPerS.toFixed(1),
        first_call_ms: +firstMs.toFixed(3),
        second_call_ms: +secondMs.toFixed(3),
        reviews_first_two_calls: reviewsFirst,
        reviews_timed_claims: reviewsTimed,
        load_avg_1m: +loadAtStart.toFixed(2),
        records_landed: landed,
        records_expected: want.size,
        controller_cpu_ms_per_claim: Number.isFinite(cpuMsPerClaim) ? +cpuMsPerClaim.toFixed(3) : null,
        sequential_claims: N,
        burst_claims: 2 * BURST,
      }),
    );
  } finally {
    agent.destroy();
    floorAgent.destroy();
    floorServer.stop();
    await clients.close();
    await sys.stop();
  }
}

runBench(main);
