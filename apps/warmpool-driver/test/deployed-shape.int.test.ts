import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoordinationV1Api, EventsV1Api, type KubeConfig } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import {
  AppProcess,
  applyCrds,
  bindMetricsReader,
  createTestNamespace,
  deleteNamespace,
  eventually,
  freePort,
  kubeconfigForServiceAccount,
  kubeconfigText,
  kubectl,
  runSuffix,
  runTool,
  scrapeMetrics,
  type MetricsReader,
} from '@sandbox-scale/e2e';
import { captureLog, leaderElectionArgs } from '@sandbox-scale/kube-runtime/testing';
import { LEASE_NAMES } from '@sandbox-scale/scale-core';
import { startDriver, type RunningDriver } from '../src/index';
import {
  TOKEN,
  condition,
  kc,
  pool,
  poolsApi,
  readPool,
  startFleet,
  targetsOf,
  template,
  templatesApi,
  type Fleet,
} from './driver-fixture';

// The driver as the chart deploys it: its own process, the chart's ServiceAccount and RBAC,
// two replicas behind one leader Lease. Pools are namespace-scoped (--namespace) because other
// suites share this control plane; the chart's default (all namespaces) keeps the same records.
const NODES = 4;
const release = `wpd-${runSuffix()}`;
const serviceAccount = `${release}-sandbox-scale-warmpool-driver`;
const chartDir = join(__dirname, '..', '..', '..', 'charts', 'sandbox-scale');
const PUTS_OK = 'sandbox_scale_warmpool_driver_pool_puts_total{result="ok"}';
const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);

let ns: string;
let fleet: Fleet;
let rbacYaml = '';
let saKc: KubeConfig;
let kubeconfigFile: string;
let tokenFile: string;
/** A ServiceAccount bound to the chart's metrics-reader ClusterRole: the driver's /metrics is read as Prometheus reads it. */
let reader: MetricsReader;
const procs: AppProcess[] = [];

/** The chart's warmpool-driver RBAC (ClusterRole, its binding, the leader-election Role) and metrics-reader ClusterRole for this release. */
async function installChartRbac(): Promise<void> {
  const rendered = await runTool('helm', [
    'template',
    release,
    chartDir,
    '--namespace',
    ns,
    '--show-only',
    'templates/rbac-warmpool-driver.yaml',
    '--show-only',
    'templates/rbac-metrics-reader.yaml',
  ]);
  expect(rendered.code).toBe(0);
  rbacYaml = rendered.stdout;
  const applied = await kubectl(['apply', '-f', '-'], { input: rbacYaml });
  expect(applied.code).toBe(0);
}

function startDriverProcess(name: string, metricsPort: number): AppProcess {
  const p = new AppProcess({
    name,
    entry: 'apps/warmpool-driver/src/main.ts',
    logPath: join(tmpdir(), `${release}-${name}.log`),
    env: { LOG_LEVEL: 'info' },
    args: [
      '--kubeconfig',
      kubeconfigFile,
      '--fleet-token-file',
      tokenFile,
      '--namespace',
      ns,
      '--node-inventory-selector',
      fleet.selector,
      '--warm-pool-sync-interval',
      '500ms',
      ...leaderElectionArgs(ns),
      '--metrics-bind-address',
      `127.0.0.1:${metricsPort}`,
      '--health-probe-bind-address',
      '0',
    ],
  });
  procs.push(p);
  return p;
}

async function leaseHolder(): Promise<string> {
  const lease = await kc.makeApiClient(CoordinationV1Api).readNamespacedLease({ namespace: ns, name: LEASE_NAMES.warmpoolDriver });
  return lease.spec?.holderIdentity ?? '';
}

/** PUT /v1/pools the process got a 2xx for, from its own /metrics (HTTPS, its self-signed certificate, the reader's token). */
async function putsOk(port: number): Promise<number> {
  const page = await scrapeMetrics({ url: `https://127.0.0.1:${port}/metrics` }, reader.token);
  if (page.status !== 200) throw new Error(`/metrics answered ${page.status}: ${page.text}`);
  const text = page.text;
  const line = text.split('\n').find((l) => l.startsWith(PUTS_OK));
  return line ? Number(line.slice(PUTS_OK.length).trim()) : 0;
}

/** Per node, the sim's pool object of `image` with its target and warm count. */
function simPools(image: string) {
  return fleet.sim.nodes.map((n) =>
    fleet.sim
      .node(n.name)
      .state.pools.list()
      .find((p) => p.key.template === image),
  );
}

async function warmOf(image: string): Promise<number[]> {
  const infos = await Promise.all(fleet.sim.nodes.map((_, i) => fleet.info(i)));
  return infos.map((info) => info.pools.filter((p) => p.key.template === image).reduce((a, p) => a + p.warm, 0));
}

beforeAll(async () => {
  await applyCrds(kc, 'charts/sandbox-scale/crds');
  ns = await createTestNamespace(kc, 'wpd-ha');
  await installChartRbac();
  reader = await bindMetricsReader(kc, { namespace: ns, name: 'scraper', clusterRole: `${release}-sandbox-scale-metrics-reader` });
  saKc = await kubeconfigForServiceAccount(kc, ns, serviceAccount);
  const dir = mkdtempSync(join(tmpdir(), 'wpd-ha-'));
  kubeconfigFile = join(dir, 'kubeconfig');
  writeFileSync(kubeconfigFile, kubeconfigText(saKc));
  tokenFile = join(dir, 'token');
  writeFileSync(tokenFile, `${TOKEN}\n`);
  fleet = await startFleet(NODES);
});

afterAll(async () => {
  await Promise.all(procs.map((p) => p.stop(2000)));
  await fleet?.stop();
  await reader?.remove();
  if (rbacYaml) await kubectl(['delete', '--ignore-not-found', '-f', '-'], { input: rbacYaml });
  await deleteNamespace(kc, ns);
});

describe('warmpool-driver in the deployed shape (2 replicas, leader election, chart ServiceAccount)', () => {
  it('keeps a pool with a deleted template warm on every node through a kill, a restart and a leader move, until the pool is deleted', async () => {
    const image = `img:ha-${runSuffix()}`;
    const portA = await freePort();
    const portB = await freePort();
    const a = startDriverProcess('a', portA);
    const holderA = await eventually(
      async () => {
        const h = await leaseHolder();
        if (h === '') throw new Error('no leader yet');
        return h;
      },
      { timeoutMs: 60_000 },
    );
    const b = startDriverProcess('b', portB);

    await templatesApi.create(ns, template(ns, 'tpl-h', image));
    await poolsApi.create(ns, pool(ns, 'pool-h', 'tpl-h', 8));
    await eventually(
      async () => {
        expect(await targetsOf(fleet, image)).toEqual([2, 2, 2, 2]);
        expect(await warmOf(image)).toEqual([2, 2, 2, 2]);
        const p = await readPool(ns, 'pool-h');
        expect(p.status?.readyReplicas).toBe(8);
        expect(p.status?.poolKey).toEqual({ template: image, net: 'none', size: 'small' });
      },
      { timeoutMs: 60_000 },
    );
    // B is up (its metrics answer) and a standby: it sent nothing.
    await eventually(async () => expect(await putsOk(portB)).toBe(0), { timeoutMs: 60_000 });

    await templatesApi.delete(ns, 'tpl-h');
    const degraded = await eventually(
      async () => {
        const d = condition(await readPool(ns, 'pool-h'), 'Degraded');
        expect(d).toMatchObject({ status: 'True', reason: 'TemplateNotFound' });
        return d;
      },
      { timeoutMs: 30_000 },
    );
    expect(degraded?.message).toContain('spec.sandboxTemplateRef.name');
    expect(degraded?.message).toContain('last-good targets');
    const event = await eventually(
      async () => {
        const list = await kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace: ns });
        const e = list.items.find((x) => x.regarding?.name === 'pool-h' && x.reason === 'TemplateNotFound');
        if (!e) throw new Error('no TemplateNotFound event yet');
        return e;
      },
      { timeoutMs: 30_000 },
    );
    expect(event.type).toBe('Warning');
    expect(event.note).toContain('spec.sandboxTemplateRef.name');
    const before = simPools(image);
    expect(before.every((p) => p !== undefined)).toBe(true);
    const warmBefore = await warmOf(image);
    expect(warmBefore).toEqual([2, 2, 2, 2]);

    // SIGKILL the leader: no Lease release, the standby waits the Lease out.
    const killedAt = Date.now();
    a.kill('SIGKILL');
    await a.exited;
    const holderB = await eventually(
      async () => {
        const h = await leaseHolder();
        if (h === '' || h === holderA) throw new Error(`still held by ${h}`);
        return h;
      },
      { timeoutMs: 60_000 },
    );
    const takeoverMs = Date.now() - killedAt;
    // The new leader has sent every node its set at least once (a fresh process PUTs every node).
    await eventually(async () => expect(await putsOk(portB)).toBeGreaterThanOrEqual(NODES), { timeoutMs: 30_000 });
    const afterFailover = { targets: await targetsOf(fleet, image), warm: await warmOf(image) };
    expect(afterFailover).toEqual({ targets: [2, 2, 2, 2], warm: [2, 2, 2, 2] });
    // The same warm pool on each node: it was never dropped and refilled in between.
    simPools(image).forEach((p, i) => {
      expect(p).toBe(before[i]);
      expect(p?.retired).toBe(false);
    });

    // The killed replica comes back as a standby; then the leader moves to it.
    const portA2 = await freePort();
    startDriverProcess('a2', portA2);
    await eventually(async () => expect(await putsOk(portA2)).toBe(0), { timeoutMs: 60_000 });
    const movedAt = Date.now();
    b.kill('SIGKILL');
    await b.exited;
    await eventually(
      async () => {
        const h = await leaseHolder();
        if (h === '' || h === holderB) throw new Error(`still held by ${h}`);
      },
      { timeoutMs: 60_000 },
    );
    const moveMs = Date.now() - movedAt;
    await eventually(async () => expect(await putsOk(portA2)).toBeGreaterThanOrEqual(NODES), { timeoutMs: 60_000 });
    const afterMove = { targets: await targetsOf(fleet, image), warm: await warmOf(image) };
    expect(afterMove).toEqual({ targets: [2, 2, 2, 2], warm: [2, 2, 2, 2] });
    simPools(image).forEach((p, i) => expect(p).toBe(before[i]));
    expect((await readPool(ns, 'pool-h')).status?.readyReplicas).toBe(8);

    // Scaling still moves the targets of the last-good key (the new leader knows which key it is).
    await kubectl(['-n', ns, 'scale', 'sandboxwarmpool/pool-h', '--replicas=12']);
    await eventually(async () => expect(await targetsOf(fleet, image)).toEqual([3, 3, 3, 3]), { timeoutMs: 30_000 });

    // Only deleting the pool drains it.
    await poolsApi.delete(ns, 'pool-h');
    await eventually(
      async () => {
        expect(await targetsOf(fleet, image)).toEqual([0, 0, 0, 0]);
        expect(await warmOf(image)).toEqual([0, 0, 0, 0]);
      },
      { timeoutMs: 30_000 },
    );

    console.log(
      `warm per node: before ${warmBefore.join(',')}; after SIGKILL of the leader ${afterFailover.warm.join(',')} (new leader after ${takeoverMs} ms); ` +
        `after the leader moved to the restarted replica ${afterMove.warm.join(',')} (after ${moveMs} ms); after the pool was deleted 0,0,0,0`,
    );
    expect(sum(afterFailover.warm)).toBe(8);
    expect(sum(afterMove.warm)).toBe(8);
    expect(takeoverMs).toBeGreaterThan(0);
    expect(moveMs).toBeGreaterThan(0);
  });

  it("leaves another namespace's pool keys on the nodes untouched when scoped to one namespace", async () => {
    const nsA = await createTestNamespace(kc, 'wpd-sa');
    const nsB = await createTestNamespace(kc, 'wpd-sb');
    const imgA = `img:sa-${runSuffix()}`;
    const imgB = `img:sb-${runSuffix()}`;
    const { log } = captureLog();
    const start = (namespace: string): RunningDriver =>
      startDriver({
        kubeConfig: saKc,
        log,
        registry: new Registry(),
        fleetToken: TOKEN,
        syncIntervalMs: 500,
        namespace,
        nodeInventorySelector: fleet.selector,
      });
    let driverA = start(nsA);
    const driverB = start(nsB);
    try {
      await templatesApi.create(nsA, template(nsA, 'tpl', imgA));
      await poolsApi.create(nsA, pool(nsA, 'pool', 'tpl', 4));
      await templatesApi.create(nsB, template(nsB, 'tpl', imgB));
      await poolsApi.create(nsB, pool(nsB, 'pool', 'tpl', 8));
      await eventually(
        async () => {
          expect(await targetsOf(fleet, imgA)).toEqual([1, 1, 1, 1]);
          expect(await targetsOf(fleet, imgB)).toEqual([2, 2, 2, 2]);
          expect(await warmOf(imgB)).toEqual([2, 2, 2, 2]);
        },
        { timeoutMs: 60_000 },
      );
      const poolsB = simPools(imgB);
      const untouched = async (): Promise<void> => {
        expect(await targetsOf(fleet, imgB)).toEqual([2, 2, 2, 2]);
        simPools(imgB).forEach((p, i) => expect(p).toBe(poolsB[i]));
      };

      await kubectl(['-n', nsA, 'scale', 'sandboxwarmpool/pool', '--replicas=8']);
      await eventually(async () => expect(await targetsOf(fleet, imgA)).toEqual([2, 2, 2, 2]), { timeoutMs: 30_000 });
      await untouched();

      // A restarted scoped driver PUTs every node again: the other namespace's key is carried over.
      const putsBefore = driverA.pusher?.puts ?? 0;
      await driverA.stop();
      driverA = start(nsA);
      await eventually(async () => expect(driverA.pusher?.puts ?? 0).toBeGreaterThanOrEqual(NODES), { timeoutMs: 30_000 });
      expect(putsBefore).toBeGreaterThan(0);
      await untouched();
      expect(await targetsOf(fleet, imgA)).toEqual([2, 2, 2, 2]);

      await poolsApi.delete(nsA, 'pool');
      await eventually(async () => expect(await targetsOf(fleet, imgA)).toEqual([0, 0, 0, 0]), { timeoutMs: 30_000 });
      await untouched();
      const keysB = await warmOf(imgB);
      console.log(
        `scoped driver: ${imgA} 1,1,1,1 -> 2,2,2,2 -> restart -> drained; ${imgB} (other namespace) warm ${keysB.join(',')} throughout`,
      );
      expect(keysB).toEqual([2, 2, 2, 2]);
    } finally {
      await driverA.stop();
      await driverB.stop();
      await deleteNamespace(kc, nsA);
      await deleteNamespace(kc, nsB);
    }
  });
});
