/**
 * The Kubernetes claim path end to end: SandboxClaim create -> Bound seen by a watch, against
 * ConfigMap create -> seen by a watch (the floor any CR round trip pays), on one control plane
 * started here, 1,000 of each at concurrency 1 and at 50. Prints a table, then ONE JSON line
 * (the last line). Figures only: nothing passes or fails on time.
 *
 *   npx nx run bench:claim-path
 */
import { startClaimController } from '@sandbox-scale/claim-controller';
import { applyCrds, startControlPlane } from '@sandbox-scale/e2e';
import { applyObject, ConfigMapResource, createInformer, createLogger, parseUntyped, ResourceClient, type KubeResource } from '@sandbox-scale/kube-runtime';
import { startSim } from '@sandbox-scale/sandboxd-sim';
import { EXTENSIONS_API_VERSION, RESOURCES, SandboxClaimSchema, parseObject, type SandboxClaim } from '@sandbox-scale/scale-core';

const N = 1_000;
const CONCURRENCIES = [1, 50];
const TOKEN = 'bench-root-token';
const IMAGE = 'registry.local/bench:1';
const NS = 'bench';
const ext = (r: { group: string; plural: string; kind: string; namespaced: boolean }): KubeResource => ({ group: r.group, version: 'v1beta1', plural: r.plural, kind: r.kind, namespaced: r.namespaced });
const Claims = ext(RESOURCES.sandboxClaim);

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

async function main(): Promise<void> {
  const cp = await startControlPlane({ controllerManager: false });
  const kc = cp.kubeConfig;
  const log = createLogger({ name: 'bench-claim-path', level: 'error' });
  const sim = await startSim({ nodes: 2, speed: 0, token: TOKEN, pools: [{ template: IMAGE, warm: 1100 }] });
  try {
    await applyCrds(kc, 'charts/sandbox-scale/crds');
    await new ResourceClient(kc, { group: '', version: 'v1', plural: 'namespaces', kind: 'Namespace', namespaced: false }).create(undefined, { metadata: { name: NS } });
    for (const n of sim.nodes) {
      // advertised generously: the figure is the claim path, not the ledger running dry between publishes
      await applyObject(kc, { apiVersion: EXTENSIONS_API_VERSION, kind: 'NodeInventory', metadata: { name: n.name }, node: n.name, address: n.addr, pools: [{ template: IMAGE, warm: 100_000, target: 1100 }] }, { fieldManager: 'bench', force: true, resource: ext(RESOURCES.nodeInventory) });
    }
    await new ResourceClient(kc, ext(RESOURCES.sandboxTemplate)).create(NS, { apiVersion: EXTENSIONS_API_VERSION, kind: 'SandboxTemplate', metadata: { name: 'base' }, spec: { podTemplate: { spec: { containers: [{ name: 'main', image: IMAGE }] } } } });
    await new ResourceClient(kc, ext(RESOURCES.sandboxWarmPool)).create(NS, { apiVersion: EXTENSIONS_API_VERSION, kind: 'SandboxWarmPool', metadata: { name: 'base' }, spec: { replicas: 1, sandboxTemplateRef: { name: 'base' } } });
    const cc = await startClaimController({ kubeConfig: kc, fleetToken: TOKEN, log, flags: { metricsBindAddress: '0', healthProbeBindAddress: '0', fastPathBindAddress: '0', maxConcurrentReconciles: 64 } });

    const waiters = new Map<string, () => void>();
    const seen = (name: string | undefined): void => {
      const w = name ? waiters.get(name) : undefined;
      if (w && name) {
        waiters.delete(name);
        w();
      }
    };
    const claimWatch = createInformer(kc, { resource: Claims, parse: (o): SandboxClaim => parseObject(SandboxClaimSchema, o), log, namespace: NS });
    const onClaim = (c: SandboxClaim): void => {
      if (c.status?.conditions?.some((k) => k.type === 'Bound' && k.status === 'True')) seen(`claim/${c.metadata.name}`);
    };
    claimWatch.on({ add: onClaim, update: onClaim });
    const cmWatch = createInformer(kc, { resource: ConfigMapResource, parse: parseUntyped, log, namespace: NS });
    cmWatch.on({ add: (o) => seen(`cm/${o.metadata.name}`) });
    claimWatch.start();
    cmWatch.start();
    await Promise.all([claimWatch.waitForSync(), cmWatch.waitForSync()]);

    const until = (key: string): Promise<void> => new Promise<void>((resolve) => waiters.set(key, resolve));
    const claims = new ResourceClient(kc, Claims);
    const cms = new ResourceClient(kc, ConfigMapResource);
    const rows: { c: number; claim: number[]; cm: number[] }[] = [];
    for (const c of CONCURRENCIES) {
      const cm = await timed(N, c, async (i) => {
        const name = `cm-${c}-${i}`;
        const w = until(`cm/${name}`);
        await cms.create(NS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { k: 'v' } });
        await w;
      });
      const claim = await timed(N, c, async (i) => {
        const name = `claim-${c}-${i}`;
        const w = until(`claim/${name}`);
        await claims.create(NS, { apiVersion: EXTENSIONS_API_VERSION, kind: 'SandboxClaim', metadata: { name }, spec: { warmPoolRef: { name: 'base' } } });
        await w;
      });
      rows.push({ c, claim, cm });
    }
    console.log('concurrency  path        p50 ms   p99 ms');
    for (const r of rows) {
      console.log(`${String(r.c).padStart(11)}  claim      ${pct(r.claim, 50).toFixed(2).padStart(7)}  ${pct(r.claim, 99).toFixed(2).padStart(7)}`);
      console.log(`${String(r.c).padStart(11)}  configmap  ${pct(r.cm, 50).toFixed(2).padStart(7)}  ${pct(r.cm, 99).toFixed(2).padStart(7)}`);
    }
    await claimWatch.stop();
    await cmWatch.stop();
    await cc.stop();
    const [c1] = rows;
    const per = Object.fromEntries(rows.map((r) => [`c${r.c}`, { claim_p50_ms: +pct(r.claim, 50).toFixed(3), claim_p99_ms: +pct(r.claim, 99).toFixed(3), configmap_p50_ms: +pct(r.cm, 50).toFixed(3), configmap_p99_ms: +pct(r.cm, 99).toFixed(3), ratio_p50: +(pct(r.claim, 50) / pct(r.cm, 50)).toFixed(3), ratio_p99: +(pct(r.claim, 99) / pct(r.cm, 99)).toFixed(3) }]));
    if (!c1) throw new Error('no rows');
    console.log(JSON.stringify({
      ratio_p50: +(pct(c1.claim, 50) / pct(c1.cm, 50)).toFixed(3),
      ratio_p99: +(pct(c1.claim, 99) / pct(c1.cm, 99)).toFixed(3),
      claim_p50_ms: +pct(c1.claim, 50).toFixed(3),
      claim_p99_ms: +pct(c1.claim, 99).toFixed(3),
      configmap_p50_ms: +pct(c1.cm, 50).toFixed(3),
      claims_per_concurrency: N,
      ...per,
    }));
  } finally {
    await sim.stop();
    await cp.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
