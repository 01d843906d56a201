import { randomBytes } from 'node:crypto';
/**
 * The Kubernetes claim path end to end: SandboxClaim create -> Bound seen by a watch, against
 * three floors measured in the same run: ConfigMap create -> seen by a watch (any round trip), a
 * bare custom resource create -> seen (the CRD machinery without any controller), and the
 * two-write floor: a bare custom resource created, seen by a watch, then given a Bound status
 * (server-side apply to its status subresource, the write a claim's record makes) that a watch
 * sees. A claim's Bound lives in its status, and a status subresource cannot be written at
 * create, so no controller of any design binds a claim faster than that floor; claim ÷ floor is
 * what this project's controller adds to it. On one control plane started here, 1,000 of each
 * at concurrency 1 and at 50 after a warm-up. Then
 * every claim is deleted (released through the finalizer), and every timed ConfigMap and probe,
 * and the heap of this process, which hosts the claim-controller, is measured against where it
 * started. Also counted: reconciles per claim (1 when no own write wakes the claim again), the
 * CPU this process spends per claim and per ConfigMap, and MaxListenersExceededWarnings. Prints a table, then ONE JSON line (the last line). Figures
 * only: nothing passes or fails on time.
 *
 * With CLAIM_PATH_ADMISSION=1 the control plane serves MutatingAdmissionPolicy (a feature gate
 * and admissionregistration.k8s.io/v1beta1, off by default in Kubernetes 1.34) and the chart's
 * finalizer policy is installed, so claims arrive with the release finalizer and the controller
 * skips its finalizer write: the figure of a cluster that supports it.
 *
 * With CLAIM_PATH_PROFILE=<dir> the CPU of this process is profiled during the timed claims only
 * (one .cpuprofile per concurrency, written to <dir>): what a claim costs here, without the
 * start-up, the warm-up and the floors.
 *
 *   npx nx run bench:claim-path            (CLAIM_PATH_N=200 for a shorter run)
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import type { V1CustomResourceDefinition } from '@kubernetes/client-node';
import type { Registry } from 'prom-client';
import { startClaimController } from '@sandbox-scale/claim-controller';
import { applyCrds, startControlPlane } from '@sandbox-scale/e2e';
import { toolPath } from '../../e2e/src/control-plane/tools';
import { HELM_TEMPLATE_KUBE_VERSION } from '../../e2e/src/control-plane/kube-version';
import { runCommand } from '../../e2e/src/system/run-command';
import {
  applyObject,
  applyStatus,
  ConfigMapResource,
  createInformer,
  createLogger,
  kubeTransportStats,
  NamespaceResource,
  parseUntyped,
  ResourceClient,
  type KubeResource,
} from '@sandbox-scale/kube-runtime';
import { startSim } from '@sandbox-scale/sandboxd-sim';
import { EXTENSIONS_API_VERSION, RESOURCES, OwnerRefKey } from '@sandbox-scale/scale-core';
import { createBasePool } from './base-pool';
import { controlPlaneCpuMs } from './process-cpu';
import { runBench } from './run-bench';

/** The key every process of this run proves claim references with. */
const CLAIM_REF_KEY = new OwnerRefKey(randomBytes(32));

const N = Number(process.env.CLAIM_PATH_N ?? 1_000);
const WARMUP = Math.min(100, N);
const CONCURRENCIES = [1, 50];
const TOKEN = 'bench-root-token';
const IMAGE = 'registry.local/bench:1';
const NS = 'bench';
const PROFILE_DIR = process.env.CLAIM_PATH_PROFILE;
const Claims = RESOURCES.sandboxClaim;
/** A custom resource no controller watches: the CR floor. */
const Probes: KubeResource = { group: 'bench.sandbox-scale.dev', version: 'v1', plural: 'probes', kind: 'Probe', namespaced: true };
const PROBE_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `${Probes.plural}.${Probes.group}` },
  spec: {
    group: Probes.group,
    scope: 'Namespaced',
    names: { plural: Probes.plural, singular: 'probe', kind: Probes.kind, listKind: 'ProbeList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      },
    ],
  },
};

/**
 * The Bound status the two-write floor writes: the shape and size of a claim's (statusApplyBody),
 * its two conditions and its sandbox, so the floor's status write costs what the claim's does.
 */
function floorStatus(name: string): Record<string, unknown> {
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const message = `node sim-0 handed over sandbox sb_${name}`;
  const cond = (type: string): Record<string, unknown> => ({
    type,
    status: 'True',
    reason: 'NodeLocalClaim',
    message,
    lastTransitionTime: now,
    observedGeneration: 1,
  });
  return {
    sandbox: {
      name,
      claimID: `sb_${name}`,
      nodeName: 'sim-0',
      podIPs: ['127.0.0.1'],
      address: '127.0.0.1:20000',
      deadline: now,
      tokenSecretName: `${name}-token`,
    },
    conditions: [cond('Bound'), cond('Ready')],
    observedGeneration: 1,
  };
}

function heapMb(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed / 1024 / 1024;
}

function pct(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
}

/** Runs `n` timed operations with `concurrency` workers; each resolves when its watch saw it. */
async function timed(n: number, concurrency: number, op: (i: number) => Promise<void>): Promise<number[]> {
  const out: number[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < n) {
      const i = next++;
      const t0 = performance.now();
      await op(i);
      out.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return out.sort((a, b) => a - b);
}

/** The chart's own finalizer policy, rendered as for a cluster that serves it, then applied. */
async function installFinalizerPolicy(binDir: string, kubeconfigPath: string): Promise<void> {
  const api = 'admissionregistration.k8s.io/v1beta1/MutatingAdmissionPolicy';
  const yaml = await runCommand(
    toolPath(binDir, 'helm'),
    [
      'template',
      'sandbox-scale',
      'charts/sandbox-scale',
      '--show-only',
      'templates/claim-finalizer-policy.yaml',
      '--api-versions',
      api,
      ...HELM_TEMPLATE_KUBE_VERSION,
    ],
    { KUBECONFIG: kubeconfigPath },
  );
  await runCommand(toolPath(binDir, 'kubectl'), ['apply', '-f', '-'], { KUBECONFIG: kubeconfigPath }, yaml);
}

/** Runs `work` under the V8 CPU profiler when a profile directory is set; writes `<dir>/<name>.cpuprofile`. */
async function profiled<T>(name: string, work: () => Promise<T>): Promise<T> {
  if (!PROFILE_DIR) return work();
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  try {
    return await work();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    session.disconnect();
    await mkdir(PROFILE_DIR, { recursive: true });
    await writeFile(join(PROFILE_DIR, `${name}.cpuprofile`), JSON.stringify(profile));
  }
}

/**
 * Whether a claim object (as the watch delivers it) is Bound. Read loosely, as the ConfigMaps
 * and probes are (parseUntyped): the bench is the instrument, and a typed parse per event would
 * be its own CPU, in this process, on the claim's side of the ratio only.
 */
function isBound(o: { status?: unknown }): boolean {
  const conditions = (o.status as { conditions?: unknown } | undefined)?.conditions;
  return (
    Array.isArray(conditions) && conditions.some((k: { type?: unknown; status?: unknown }) => k.type === 'Bound' && k.status === 'True')
  );
}

/** Reconciles the claim controller has run so far (all results). */
async function reconcilesSoFar(registry: Registry): Promise<number> {
  const m = await registry.getSingleMetric('sandbox_scale_reconcile_total')?.get();
  return (m?.values ?? []).filter((v) => v.labels.controller === 'sandboxclaim').reduce((a, v) => a + v.value, 0);
}

async function main(): Promise<void> {
  // a per-call signal chained onto a long-lived one and never let go shows up as this warning
  let listenerWarnings = 0;
  process.on('warning', (w) => {
    if (w.name === 'MaxListenersExceededWarning') listenerWarnings++;
  });
  const admission = process.env.CLAIM_PATH_ADMISSION === '1';
  const cp = await startControlPlane({
    controllerManager: false,
    ...(admission
      ? { apiserverArgs: ['--feature-gates=MutatingAdmissionPolicy=true', '--runtime-config=admissionregistration.k8s.io/v1beta1=true'] }
      : {}),
  });
  const kc = cp.kubeConfig;
  const log = createLogger({ name: 'bench-claim-path', level: 'error' });
  // every claim of the run is alive until the end, and any node may get all of them: each node
  // holds that many warm sandboxes, so no claim waits on a node's refill (a 429 then costs a
  // NoWarmCapacity backoff of seconds, which is the sim's pace, not the claim path's)
  const warmPerNode = WARMUP + CONCURRENCIES.length * N;
  const sim = await startSim({ nodes: 2, speed: 0, token: TOKEN, pools: [{ template: IMAGE, warm: warmPerNode }] });
  try {
    await applyCrds(kc, 'charts/sandbox-scale/crds');
    await applyCrds(kc, [PROBE_CRD as unknown as V1CustomResourceDefinition]);
    if (admission) await installFinalizerPolicy(cp.binDir, cp.kubeconfigPath);
    await new ResourceClient(kc, NamespaceResource).create(undefined, { metadata: { name: NS } });
    for (const n of sim.nodes) {
      // advertised generously: the figure is the claim path, not the ledger running dry between publishes
      await applyObject(
        kc,
        {
          apiVersion: EXTENSIONS_API_VERSION,
          kind: 'NodeInventory',
          metadata: { name: n.name },
          node: n.name,
          address: n.addr,
          pools: [{ template: IMAGE, warm: 100_000, target: warmPerNode }],
        },
        { fieldManager: 'bench', force: true, resource: RESOURCES.nodeInventory },
      );
    }
    await createBasePool(kc, NS, IMAGE, 1);
    const cc = await startClaimController({
      claimRefKey: CLAIM_REF_KEY,
      kubeConfig: kc,
      fleetToken: TOKEN,
      log,
      flags: { metricsBindAddress: '0', healthProbeBindAddress: '0', fastPathBindAddress: '0', maxConcurrentReconciles: 64 },
    });

    const waiters = new Map<string, () => void>();
    const seen = (name: string | undefined): void => {
      const w = name ? waiters.get(name) : undefined;
      if (w && name) {
        waiters.delete(name);
        w();
      }
    };
    const claimWatch = createInformer(kc, { resource: Claims, parse: parseUntyped, log, namespace: NS });
    const onClaim = (c: { metadata: { name?: string }; status?: unknown }): void => {
      if (isBound(c)) seen(`claim/${c.metadata.name}`);
    };
    // claims whose first version seen already carries the release finalizer (set at admission)
    let admittedWithFinalizer = 0;
    claimWatch.on({
      add: (c) => {
        if (Array.isArray(c.metadata.finalizers) && c.metadata.finalizers.length > 0) admittedWithFinalizer++;
        onClaim(c);
      },
      update: onClaim,
    });
    const cmWatch = createInformer(kc, { resource: ConfigMapResource, parse: parseUntyped, log, namespace: NS });
    cmWatch.on({ add: (o) => seen(`cm/${o.metadata.name}`) });
    const probeWatch = createInformer(kc, { resource: Probes, parse: parseUntyped, log, namespace: NS });
    probeWatch.on({
      add: (o) => seen(`probe/${o.metadata.name}`),
      update: (o: { metadata: { name?: string }; status?: unknown }) => {
        if (isBound(o)) seen(`probe-bound/${o.metadata.name}`);
      },
    });
    claimWatch.start();
    cmWatch.start();
    probeWatch.start();
    await Promise.all([claimWatch.waitForSync(), cmWatch.waitForSync(), probeWatch.waitForSync()]);

    const until = (key: string): Promise<void> => new Promise<void>((resolve) => waiters.set(key, resolve));
    const claims = new ResourceClient(kc, Claims);
    const cms = new ResourceClient(kc, ConfigMapResource);
    const probes = new ResourceClient(kc, Probes);
    const createClaim = async (name: string): Promise<void> => {
      const w = until(`claim/${name}`);
      await claims.create(NS, {
        apiVersion: EXTENSIONS_API_VERSION,
        kind: 'SandboxClaim',
        metadata: { name },
        spec: { warmPoolRef: { name: 'base' } },
      });
      await w;
    };
    const createCm = async (name: string): Promise<void> => {
      const w = until(`cm/${name}`);
      await cms.create(NS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { k: 'v' } });
      await w;
    };
    const createProbe = async (name: string): Promise<void> => {
      const w = until(`probe/${name}`);
      await probes.create(NS, { apiVersion: `${Probes.group}/${Probes.version}`, kind: Probes.kind, metadata: { name }, spec: { k: 'v' } });
      await w;
    };
    // the two-write floor: what any controller must do to bind a claim, with none of its work
    const bindProbe = async (name: string): Promise<void> => {
      await createProbe(name);
      const w = until(`probe-bound/${name}`);
      await applyStatus(
        kc,
        {
          apiVersion: `${Probes.group}/${Probes.version}`,
          kind: Probes.kind,
          metadata: { name, namespace: NS },
          status: floorStatus(name),
        },
        { fieldManager: 'bench-floor', force: true, resource: Probes },
      );
      await w;
    };
    // warm-up: connections, caches and JIT of every path, then the heap the claims start from
    await timed(WARMUP, 8, (i) => createCm(`cm-warm-${i}`));
    await timed(WARMUP, 8, (i) => createProbe(`probe-warm-${i}`));
    await timed(WARMUP, 8, (i) => bindProbe(`floor-warm-${i}`));
    await timed(WARMUP, 8, (i) => createClaim(`claim-warm-${i}`));
    const heapStartMb = heapMb();
    const rows: {
      c: number;
      claim: number[];
      cm: number[];
      crd: number[];
      floor: number[];
      reconciles: number;
      cmCpu: number;
      claimCpu: number;
      /** API requests (this process: the bench's creates, the controller's writes and events) and TLS handshakes per claim */
      apiRequests: number;
      handshakes: number;
      /** CPU of kube-apiserver and etcd per claim and per ConfigMap (ms) */
      claimCpCpu: number;
      cmCpCpu: number;
      crdCpCpu: number;
      floorCpCpu: number;
    }[] = [];
    // CPU of this process (controller, sandboxd-sim and the bench's own informers) per operation
    const cpuMs = (since: NodeJS.CpuUsage): number => {
      const u = process.cpuUsage(since);
      return (u.user + u.system) / 1000 / N;
    };
    for (const c of CONCURRENCIES) {
      const cmStart = process.cpuUsage();
      const cmCpStart = controlPlaneCpuMs(cp.dir);
      const cm = await timed(N, c, (i) => createCm(`cm-${c}-${i}`));
      const cmCpu = cpuMs(cmStart);
      const cmCpCpu = (controlPlaneCpuMs(cp.dir) - cmCpStart) / N;
      const crdCpStart = controlPlaneCpuMs(cp.dir);
      const crd = await timed(N, c, (i) => createProbe(`probe-${c}-${i}`));
      const crdCpCpu = (controlPlaneCpuMs(cp.dir) - crdCpStart) / N;
      const floorCpStart = controlPlaneCpuMs(cp.dir);
      const floor = await timed(N, c, (i) => bindProbe(`floor-${c}-${i}`));
      const floorCpCpu = (controlPlaneCpuMs(cp.dir) - floorCpStart) / N;
      const before = await reconcilesSoFar(cc.registry);
      const claimStart = process.cpuUsage();
      const apiStart = kubeTransportStats(kc).api;
      const claimCpStart = controlPlaneCpuMs(cp.dir);
      const claim = await profiled(`claims-c${c}`, () => timed(N, c, (i) => createClaim(`claim-${c}-${i}`)));
      const claimCpu = cpuMs(claimStart);
      // the watch events of the last claims' own writes come in after they were seen Bound, and
      // the events recorder writes its series counts within a second
      await new Promise((r) => setTimeout(r, 1500));
      const apiEnd = kubeTransportStats(kc).api;
      const claimCpCpu = (controlPlaneCpuMs(cp.dir) - claimCpStart) / N;
      rows.push({
        c,
        claim,
        cm,
        crd,
        floor,
        reconciles: (await reconcilesSoFar(cc.registry)) - before,
        cmCpu,
        claimCpu,
        apiRequests: (apiEnd.requests - apiStart.requests) / N,
        handshakes: (apiEnd.handshakes - apiStart.handshakes) / N,
        claimCpCpu,
        cmCpCpu,
        crdCpCpu,
        floorCpCpu,
      });
    }
    // every timed claim is deleted (released on its node, finalizer removed), and so are the
    // timed ConfigMaps and probes, whose caches here would otherwise hold them; the heap then
    // returns to where it started unless something per claim is kept
    const names = rows.flatMap((r) => Array.from({ length: N }, (_, i) => `claim-${r.c}-${i}`));
    await timed(names.length, 50, (i) => claims.delete(NS, names[i] ?? '').then(() => undefined));
    await timed(names.length, 50, (i) => cms.delete(NS, (names[i] ?? '').replace(/^claim-/, 'cm-')).then(() => undefined));
    await timed(names.length, 50, (i) => probes.delete(NS, (names[i] ?? '').replace(/^claim-/, 'probe-')).then(() => undefined));
    await timed(names.length, 50, (i) => probes.delete(NS, (names[i] ?? '').replace(/^claim-/, 'floor-')).then(() => undefined));
    const gone = Date.now();
    const settled = (): boolean =>
      claimWatch.list().length <= WARMUP && cmWatch.list().length <= WARMUP && probeWatch.list().length <= 2 * WARMUP;
    while (!settled() && Date.now() - gone < 300_000) await new Promise((r) => setTimeout(r, 200));
    const heapEndMb = heapMb();
    console.log('concurrency  path        p50 ms   p99 ms');
    for (const r of rows) {
      console.log(
        `${String(r.c).padStart(11)}  claim      ${pct(r.claim, 50).toFixed(2).padStart(7)}  ${pct(r.claim, 99).toFixed(2).padStart(7)}`,
      );
      console.log(
        `${String(r.c).padStart(11)}  configmap  ${pct(r.cm, 50).toFixed(2).padStart(7)}  ${pct(r.cm, 99).toFixed(2).padStart(7)}`,
      );
      console.log(
        `${String(r.c).padStart(11)}  bare CR    ${pct(r.crd, 50).toFixed(2).padStart(7)}  ${pct(r.crd, 99).toFixed(2).padStart(7)}`,
      );
      console.log(
        `${String(r.c).padStart(11)}  two writes ${pct(r.floor, 50).toFixed(2).padStart(7)}  ${pct(r.floor, 99).toFixed(2).padStart(7)}   (bare CR create seen, then its Bound status seen: no controller)`,
      );
      console.log(
        `${String(r.c).padStart(11)}  reconciles per claim ${(r.reconciles / N).toFixed(2)}; CPU of this process per claim ${r.claimCpu.toFixed(2)} ms, per ConfigMap ${r.cmCpu.toFixed(2)} ms`,
      );
      console.log(
        `${String(r.c).padStart(11)}  API requests per claim ${r.apiRequests.toFixed(2)} (the create included), TLS handshakes per claim ${r.handshakes.toFixed(3)}; CPU of kube-apiserver and etcd per claim ${r.claimCpCpu.toFixed(2)} ms, per ConfigMap ${r.cmCpCpu.toFixed(2)} ms, per bare CR ${r.crdCpCpu.toFixed(2)} ms, per two-write floor ${r.floorCpCpu.toFixed(2)} ms`,
      );
      console.log(
        `${String(r.c).padStart(11)}  ratios     claim/configmap p50 ${(pct(r.claim, 50) / pct(r.cm, 50)).toFixed(2)} p99 ${(pct(r.claim, 99) / pct(r.cm, 99)).toFixed(2)}; claim/bare CR p50 ${(pct(r.claim, 50) / pct(r.crd, 50)).toFixed(2)} p99 ${(pct(r.claim, 99) / pct(r.crd, 99)).toFixed(2)}; two-write floor/configmap p50 ${(pct(r.floor, 50) / pct(r.cm, 50)).toFixed(2)} p99 ${(pct(r.floor, 99) / pct(r.cm, 99)).toFixed(2)}; claim/two-write floor p50 ${(pct(r.claim, 50) / pct(r.floor, 50)).toFixed(2)} p99 ${(pct(r.claim, 99) / pct(r.floor, 99)).toFixed(2)}`,
      );
    }
    console.log(`claims that arrived with the finalizer (admission): ${admittedWithFinalizer}`);
    console.log(`MaxListenersExceededWarning: ${listenerWarnings}`);
    console.log(
      `heap: ${heapStartMb.toFixed(1)} MB after the warm-up, ${heapEndMb.toFixed(1)} MB after ${names.length} claims bound and deleted (${claimWatch.list().length} claims left)`,
    );
    await claimWatch.stop();
    await cmWatch.stop();
    await probeWatch.stop();
    await cc.stop();
    const [c1] = rows;
    const r3 = (n: number): number => +n.toFixed(3);
    const per = Object.fromEntries(
      rows.map((r) => [
        `c${r.c}`,
        {
          claim_p50_ms: r3(pct(r.claim, 50)),
          claim_p99_ms: r3(pct(r.claim, 99)),
          configmap_p50_ms: r3(pct(r.cm, 50)),
          configmap_p99_ms: r3(pct(r.cm, 99)),
          crd_p50_ms: r3(pct(r.crd, 50)),
          crd_p99_ms: r3(pct(r.crd, 99)),
          ratio_p50: r3(pct(r.claim, 50) / pct(r.cm, 50)),
          ratio_p99: r3(pct(r.claim, 99) / pct(r.cm, 99)),
          crd_ratio_p50: r3(pct(r.claim, 50) / pct(r.crd, 50)),
          crd_ratio_p99: r3(pct(r.claim, 99) / pct(r.crd, 99)),
          floor_p50_ms: r3(pct(r.floor, 50)),
          floor_p99_ms: r3(pct(r.floor, 99)),
          floor_ratio_p50: r3(pct(r.floor, 50) / pct(r.cm, 50)),
          floor_ratio_p99: r3(pct(r.floor, 99) / pct(r.cm, 99)),
          claim_over_floor_p50: r3(pct(r.claim, 50) / pct(r.floor, 50)),
          claim_over_floor_p99: r3(pct(r.claim, 99) / pct(r.floor, 99)),
          reconciles_per_claim: r3(r.reconciles / N),
          cpu_ms_per_claim: r3(r.claimCpu),
          cpu_ms_per_configmap: r3(r.cmCpu),
          api_requests_per_claim: r3(r.apiRequests),
          tls_handshakes_per_claim: r3(r.handshakes),
          control_plane_cpu_ms_per_claim: r3(r.claimCpCpu),
          control_plane_cpu_ms_per_configmap: r3(r.cmCpCpu),
          control_plane_cpu_ms_per_crd: r3(r.crdCpCpu),
          control_plane_cpu_ms_per_floor: r3(r.floorCpCpu),
        },
      ]),
    );
    if (!c1) throw new Error('no rows');
    console.log(
      JSON.stringify({
        finalizer_at_admission: admission,
        claims_admitted_with_finalizer: admittedWithFinalizer,
        ratio_p50: r3(pct(c1.claim, 50) / pct(c1.cm, 50)),
        ratio_p99: r3(pct(c1.claim, 99) / pct(c1.cm, 99)),
        crd_ratio_p50: r3(pct(c1.claim, 50) / pct(c1.crd, 50)),
        crd_ratio_p99: r3(pct(c1.claim, 99) / pct(c1.crd, 99)),
        floor_ratio_p50: r3(pct(c1.floor, 50) / pct(c1.cm, 50)),
        floor_ratio_p99: r3(pct(c1.floor, 99) / pct(c1.cm, 99)),
        claim_over_floor_p50: r3(pct(c1.claim, 50) / pct(c1.floor, 50)),
        claim_p50_ms: r3(pct(c1.claim, 50)),
        claim_p99_ms: r3(pct(c1.claim, 99)),
        configmap_p50_ms: r3(pct(c1.cm, 50)),
        crd_p50_ms: r3(pct(c1.crd, 50)),
        floor_p50_ms: r3(pct(c1.floor, 50)),
        claims_per_concurrency: N,
        heap_start_mb: +heapStartMb.toFixed(1),
        heap_end_mb: +heapEndMb.toFixed(1),
        max_listener_warnings: listenerWarnings,
        ...per,
      }),
    );
  } finally {
    await sim.stop();
    await cp.stop();
  }
}

runBench(main);
