// bench:scale — a million sandboxes on 400 nodes, served from 400 NodeInventories: what etcd
// holds (objects, bytes), what our server holds (heap per sandbox), and what a user gets
// through kube-apiserver: paged lists at limit 500 and 5,000, a list filtered by node and one
// by label, a get, a watch with its initial events up to the initial-events-end bookmark, and
// how long an inventory change takes to reach that watch. Prints a table, then JSON.
// sandbox-apiserver runs in this process with the young generation the chart gives a fleet this
// large (sandboxApiserver.maxSemiSpaceMiB=64: NODE_OPTIONS in bench/project.json).
import { execFile, fork } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { request, type RequestOptions } from 'node:https';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { applyObject } from '@sandbox-scale/kube-runtime';
import { applyCrds, freePort, startControlPlane, type ControlPlane } from '@sandbox-scale/e2e';
import { EXTENSIONS_API_VERSION, inventoryRow, RESOURCES, SANDBOX_LABELS, type InventoryEntry } from '@sandbox-scale/scale-core';
import { httpsClient, p50, registerApiService, startBenchApiserver, writeServingCert, type Client } from './aggregated-server';
import { controlPlaneCpuMs, processCpuMs } from './process-cpu';
import { runBench } from './run-bench';
import { FromWatchersSchema, type FromWatchers, type ToWatchers, type WatchTarget } from './watch-clients-protocol';

const run = promisify(execFile);
const NODES = Number(process.env.BENCH_NODES ?? 400);
const SANDBOXES = Number(process.env.BENCH_SANDBOXES ?? 1_000_000);
const NAMESPACES = 50;
/** One entry in this many is Paused: the label-filtered list's match set. */
const PAUSED_EVERY = 100;
const CHANGES = Number(process.env.BENCH_CHANGES ?? 60);
const IDLE_WINDOW_MS = Number(process.env.BENCH_IDLE_MS ?? 10_000);
const WATCHERS = Number(process.env.BENCH_WATCHERS ?? 100);
const CHANGE_ROUNDS = Number(process.env.BENCH_CHANGE_ROUNDS ?? 2);
/** A file to write a CPU profile of this process (sandbox-apiserver and the publishing) over the change rounds to. */
const PROFILE = process.env.BENCH_CPU_PROFILE ?? '';
/** The entries a change round touches on every node: 1 % of them. */
const CHANGED = (i: number): boolean => i % 100 === 1;
const OURS = '/apis/agents.x-k8s.io/v1beta1/sandboxes';
/** Every kind of ours that etcd stores; the sandboxes themselves are none of them. */
const STORED_KINDS = ['nodeinventories', 'sandboxwarmpools', 'sandboxtemplates', 'sandboxclaims'];

const gc = (): void => (globalThis as { gc?: () => void }).gc?.();
const pct = (xs: number[], q: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))] ?? 0;

function entry(n: number, i: number, phase = i % PAUSED_EVERY === 0 ? 'Paused' : 'Running'): InventoryEntry {
  const ns = `team-${(n * 7 + i) % NAMESPACES}`;
  return {
    name: `${ns}/sb-${n}-${i}`,
    id: `sb_${n.toString(16).padStart(4, '0')}${i.toString(16).padStart(8, '0')}`,
    phase,
    claimRef: `${ns}/sb-${n}-${i}`,
    addr: `10.${(n >> 8) & 255}.${n & 255}.${i & 255}:7777`,
    deadline: '2030-01-01T00:00:00Z',
    claimedAt: '2026-01-01T00:00:00Z',
  };
}

/** How a node's sandboxes are written: as rows (what the publisher writes), or as entry objects (what it wrote before). */
type InventoryForm = 'rows' | 'entries';

/** Node `n`'s inventory as the publisher writes it; `phaseOf` names the entries whose phase differs from the usual one. */
function inventory(n: number, perNode: number, phaseOf: (i: number) => string | undefined = () => undefined, form: InventoryForm = 'rows') {
  const node = `scale-node-${n}`;
  const entries = Array.from({ length: perNode }, (_, i) => {
    const phase = phaseOf(i);
    return phase === undefined ? entry(n, i) : entry(n, i, phase);
  });
  const held = form === 'rows' ? { rows: entries.map(inventoryRow) } : { entries };
  return { apiVersion: EXTENSIONS_API_VERSION, kind: 'NodeInventory', metadata: { name: node }, node, address: '127.0.0.1:1', ...held };
}

/** Updates of one node-sized inventory each form is measured over. */
const FORM_WRITES = Number(process.env.BENCH_FORM_WRITES ?? 10);

interface FormCost {
  readonly cpuMs: number;
  readonly ms: number;
}

/**
 * What one inventory update costs kube-apiserver + etcd in each form: a node-sized inventory
 * created, then updated FORM_WRITES times with 1 % of its entries changed each time, one write at
 * a time, then deleted. Run before sandbox-apiserver starts, so no server reads the probe.
 */
async function formCosts(cp: ControlPlane, perNode: number): Promise<Record<InventoryForm, FormCost>> {
  const opts = { fieldManager: 'bench', force: true, resource: RESOURCES.nodeInventory };
  const out: Partial<Record<InventoryForm, FormCost>> = {};
  for (const form of ['entries', 'rows'] as const) {
    const probe = NODES + 1;
    await applyObject(
      cp.kubeConfig,
      inventory(probe, perNode, () => undefined, form),
      opts,
    );
    const c0 = controlPlaneCpuMs(cp.dir);
    const t0 = performance.now();
    for (let w = 1; w <= FORM_WRITES; w++) {
      const phase = w % 2 === 1 ? 'Paused' : 'Running';
      await applyObject(
        cp.kubeConfig,
        inventory(probe, perNode, (i) => (CHANGED(i) ? phase : undefined), form),
        opts,
      );
    }
    out[form] = { cpuMs: (controlPlaneCpuMs(cp.dir) - c0) / FORM_WRITES, ms: (performance.now() - t0) / FORM_WRITES };
    await run(join(cp.binDir, 'kubectl'), ['delete', 'nodeinventory', `scale-node-${probe}`], {
      env: { ...process.env, KUBECONFIG: cp.kubeconfigPath },
    });
  }
  return out as Record<InventoryForm, FormCost>;
}

interface Paged {
  readonly ms: number;
  readonly items: number;
}

async function pagedList(api: Client, query: string, limit: number): Promise<Paged> {
  const t0 = performance.now();
  let items = 0;
  let cont = '';
  do {
    const q = `${query ? `${query}&` : ''}limit=${limit}${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`;
    const r = await api('GET', `${OURS}?${q}`);
    if (r.status !== 200) throw new Error(`GET ${OURS}?${q} answered ${r.status}: ${r.body.slice(0, 300)}`);
    const page = JSON.parse(r.body) as { items: unknown[]; metadata: { continue?: string } };
    items += page.items.length;
    cont = page.metadata.continue ?? '';
  } while (cont !== '');
  return { ms: performance.now() - t0, items };
}

/** kube-apiserver's own Prometheus text, one metric's samples summed (optionally those whose labels contain `match`). */
async function metric(api: Client, name: string, match = ''): Promise<number> {
  const r = await api('GET', '/metrics', undefined, 'text/plain');
  let total = 0;
  for (const line of r.body.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (match !== '' && !line.includes(match)) continue;
    total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

/** How many objects of our kinds etcd holds, each counted by a one-item list and its remainingItemCount. */
async function storedObjects(api: Client): Promise<number> {
  let total = 0;
  for (const kind of STORED_KINDS) {
    const r = await api('GET', `/apis/${EXTENSIONS_API_VERSION}/${kind}?limit=1`);
    if (r.status !== 200) throw new Error(`GET ${kind} answered ${r.status}`);
    const list = JSON.parse(r.body) as { items: unknown[]; metadata: { remainingItemCount?: number } };
    total += list.items.length + (list.metadata.remainingItemCount ?? 0);
  }
  return total;
}

function dirBytes(dir: string): number {
  let total = 0;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p);
    total += st.isDirectory() ? dirBytes(p) : st.size;
  }
  return total;
}

/** Resident memory of the control plane's kube-apiserver (found by its data directory in its command line). */
function apiserverRssBytes(cp: ControlPlane): number {
  for (const pid of readdirSync('/proc').filter((p) => /^[0-9]+$/.test(p))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!cmd.includes('kube-apiserver') || !cmd.includes(cp.dir)) continue;
      const rss = /VmRSS:\s+([0-9]+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      return rss ? Number(rss[1]) * 1024 : 0;
    } catch {
      // a process that ended while the table was read
    }
  }
  return 0;
}

interface WatchEvent {
  type: string;
  object: { metadata?: { name?: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> } };
}

/**
 * A streaming watch through kube-apiserver, the way client-go's WatchList asks for it: initial
 * events, then the initial-events-end bookmark, then changes. Events are handed to `onEvent` as
 * their lines complete.
 */
function openWatch(base: RequestOptions, path: string, onEvent: (e: WatchEvent) => void): { close: () => void; done: Promise<void> } {
  let close = (): void => undefined;
  const done = new Promise<void>((resolve, reject) => {
    const req = request({ ...base, path, method: 'GET', headers: { Accept: 'application/json' } }, (res) => {
      if (res.statusCode !== 200) {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString('utf8')));
        res.on('end', () => reject(new Error(`watch answered ${res.statusCode}: ${body.slice(0, 400)}`)));
        return;
      }
      let rest = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const lines = (rest + chunk).split('\n');
        rest = lines.pop() ?? '';
        for (const line of lines) if (line.trim() !== '') onEvent(JSON.parse(line) as WatchEvent);
      });
      res.on('end', resolve);
      res.on('error', resolve);
    });
    req.on('error', (err) => (req.destroyed ? resolve() : reject(err)));
    req.end();
    close = () => req.destroy();
  });
  return { close, done };
}

type Delivered = Extract<FromWatchers, { type: 'delivered' }>;

/** The watchers' process (watch-clients.ts): what it is told, and each round's answer in turn. */
function forkWatchClients(): {
  send: (m: ToWatchers) => void;
  delivered: () => Promise<Delivered>;
  pid: number;
  stop: () => Promise<void>;
} {
  const child = fork('bench/src/watch-clients.ts', [], { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
  const answers: FromWatchers[] = [];
  let wake = (): void => undefined;
  let exited: string | undefined;
  child.on('message', (raw) => {
    answers.push(FromWatchersSchema.parse(raw));
    wake();
  });
  child.on('exit', (code, signal) => {
    exited = `the watchers' process exited (${code ?? signal})`;
    wake();
  });
  return {
    send: (m) => void child.send(m),
    pid: child.pid ?? 0,
    async delivered() {
      for (;;) {
        const a = answers.shift();
        if (a?.type === 'failed') throw new Error(a.error);
        if (a !== undefined) return a;
        if (exited !== undefined) throw new Error(exited);
        await new Promise<void>((r) => (wake = r));
      }
    },
    async stop() {
      if (exited !== undefined) return;
      const gone = new Promise<void>((r) => child.once('exit', () => r()));
      child.send({ type: 'close' } satisfies ToWatchers);
      await gone;
    },
  };
}

/** A V8 CPU profile of this process, taken until stop() (a .cpuprofile body, for DevTools or a flame graph). */
async function startProfile(): Promise<{ stop: () => Promise<unknown> }> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return {
    async stop() {
      const { profile } = await session.post('Profiler.stop');
      session.disconnect();
      return profile;
    },
  };
}

async function main(): Promise<void> {
  const cp = await startControlPlane({ controllerManager: false });
  const kubectl = (args: string[]) =>
    run(join(cp.binDir, 'kubectl'), args, { env: { ...process.env, KUBECONFIG: cp.kubeconfigPath }, maxBuffer: 1 << 30 });
  try {
    await applyCrds(cp.kubeConfig, 'charts/sandbox-scale/crds');
    const api = await httpsClient(cp.kubeConfig, 16);
    const perNode = Math.ceil(SANDBOXES / NODES);
    const total = perNode * NODES;
    const forms = await formCosts(cp, perNode);
    const formRatio = forms.rows.cpuMs / forms.entries.cpuMs;

    const p0 = performance.now();
    let inventoryBytes = 0;
    let largest = 0;
    const publishOne = async (n: number): Promise<void> => {
      const body = inventory(n, perNode);
      const bytes = JSON.stringify(body).length;
      inventoryBytes += bytes;
      largest = Math.max(largest, bytes);
      await applyObject(cp.kubeConfig, body, { fieldManager: 'bench', force: true, resource: RESOURCES.nodeInventory });
    };
    const nodesLeft = Array.from({ length: NODES }, (_, n) => n);
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let n = nodesLeft.shift(); n !== undefined; n = nodesLeft.shift()) await publishOne(n);
      }),
    );
    const publishMs = performance.now() - p0;
    const etcdObjects = await storedObjects(api);
    const etcdBytes = dirBytes(join(cp.dir, 'etcd'));
    const kubeRssBefore = apiserverRssBytes(cp);

    const cert = await writeServingCert('bench-scale');
    const port = await freePort();
    gc();
    const heapBefore = process.memoryUsage().heapUsed;
    const s0 = performance.now();
    const server = await startBenchApiserver(cp.kubeConfig, cert, port);
    const syncMs = performance.now() - s0;
    gc();
    const heapAfter = process.memoryUsage().heapUsed;
    const heapPer = Math.round((heapAfter - heapBefore) / total);
    await registerApiService(kubectl, api, { name: 'bench-scale', port, caCert: cert.caCert });

    const list500 = await pagedList(api, '', 500);
    const list5000 = await pagedList(api, '', 5000);
    const node7 = await pagedList(api, `fieldSelector=${encodeURIComponent('status.nodeName=scale-node-7')}`, 500);
    const paused = await pagedList(api, `labelSelector=${encodeURIComponent(`${SANDBOX_LABELS.phase}=Paused`)}`, 500);
    const expectedPaused = NODES * Math.ceil(perNode / PAUSED_EVERY);
    const getTimes: number[] = [];
    let getOk = true;
    for (let i = 0; i < 20; i++) {
      const n = (i * 37) % NODES;
      const e = entry(n, (i * 101) % perNode);
      const [ns, name] = e.name.split('/');
      const g0 = performance.now();
      const r = await api('GET', `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes/${name}`);
      getTimes.push(performance.now() - g0);
      getOk &&= r.status === 200;
    }
    const kubeRssAfterLists = apiserverRssBytes(cp);

    // a watch with its initial events (WatchList), then changes made on nodes
    const base: RequestOptions = {};
    await cp.kubeConfig.applyToHTTPSOptions(base);
    const server0 = new URL(cp.server);
    Object.assign(base, { hostname: server0.hostname, port: server0.port });
    let initial = 0;
    let initialEnd = -1;
    const w0 = performance.now();
    const seen = new Map<string, number>();
    let initialDone = (): void => undefined;
    const initialPromise = new Promise<void>((resolve) => (initialDone = resolve));
    const watch = openWatch(
      base,
      `${OURS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=3600`,
      (e) => {
        if (initialEnd < 0) {
          if (e.type === 'ADDED') initial++;
          if (e.type === 'BOOKMARK' && e.object.metadata?.annotations?.['k8s.io/initial-events-end'] === 'true') {
            initialEnd = performance.now() - w0;
            initialDone();
          }
          return;
        }
        const m = e.object.metadata;
        if (e.type === 'MODIFIED') seen.set(`${m?.namespace}/${m?.name}/${m?.labels?.[SANDBOX_LABELS.phase]}`, performance.now());
      },
    );
    await Promise.race([initialPromise, watch.done.then(() => Promise.reject(new Error('the watch ended before its initial events did')))]);

    // staleness: one sandbox's phase changes in its node's inventory; from the write to the watch event
    const staleness: number[] = [];
    for (let c = 0; c < CHANGES; c++) {
      const n = (c * 13) % NODES;
      const index = 1 + ((c * 29) % (perNode - 1));
      const phase = index % PAUSED_EVERY === 0 ? 'Running' : 'Paused';
      const key = `${entry(n, index).name}/${phase}`;
      const body = inventory(n, perNode, (i) => (i === index ? phase : undefined));
      seen.clear();
      const t0 = performance.now();
      await applyObject(cp.kubeConfig, body, { fieldManager: 'bench', force: true, resource: RESOURCES.nodeInventory });
      const deadline = t0 + 30_000;
      while (!seen.has(key) && performance.now() < deadline) await new Promise((r) => setTimeout(r, 1));
      const at = seen.get(key);
      if (at === undefined) throw new Error(`no MODIFIED event for ${key} within 30 s`);
      staleness.push(at - t0);
      // back to what the node had, so every change is one entry's; seen before the next, so no
      // event of this phase is still on its way when the watchers below open
      const back = `${entry(n, index).name}/${entry(n, index).phase}`;
      await applyObject(cp.kubeConfig, inventory(n, perNode), { fieldManager: 'bench', force: true, resource: RESOURCES.nodeInventory });
      while (!seen.has(back) && performance.now() < deadline + 30_000) await new Promise((r) => setTimeout(r, 1));
      if (!seen.has(back)) throw new Error(`no MODIFIED event for ${back} within 30 s`);
    }

    // many watchers at once, from the current revision; every node changes 1 % of its sandboxes per round
    const publishAll = async (phaseOf: (i: number) => string | undefined): Promise<void> => {
      const left = Array.from({ length: NODES }, (_, n) => n);
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          for (let n = left.shift(); n !== undefined; n = left.shift())
            await applyObject(cp.kubeConfig, inventory(n, perNode, phaseOf), {
              fieldManager: 'bench',
              force: true,
              resource: RESOURCES.nodeInventory,
            });
        }),
      );
    };
    const rvNow = (JSON.parse((await api('GET', `${OURS}?limit=1`)).body) as { metadata: { resourceVersion: string } }).metadata
      .resourceVersion;
    gc();
    const heapW0 = process.memoryUsage().heapUsed;
    // the watchers run in a process of their own: what a round costs here is the server's
    const pem = (v: unknown): string => (Buffer.isBuffer(v) ? v.toString('utf8') : String(v ?? ''));
    const target: WatchTarget = {
      hostname: server0.hostname,
      port: server0.port,
      ca: pem(base.ca),
      cert: pem(base.cert),
      key: pem(base.key),
    };
    const clients = forkWatchClients();
    clients.send({
      type: 'open',
      target,
      path: `${OURS}?watch=true&allowWatchBookmarks=true&resourceVersion=${rvNow}&timeoutSeconds=3600`,
      count: WATCHERS,
    });
    // every watcher is open once each has seen one change
    const probe = entry(0, 2).name;
    clients.send({ type: 'await', expected: 1 });
    await applyObject(
      cp.kubeConfig,
      inventory(0, perNode, (i) => (i === 2 ? 'Probe' : undefined)),
      {
        fieldManager: 'bench',
        force: true,
        resource: RESOURCES.nodeInventory,
      },
    );
    await clients.delivered().catch((err: unknown) => {
      throw new Error(`every watcher to see ${probe} change: ${String(err)}`);
    });
    gc();
    const heapWatchers = process.memoryUsage().heapUsed;
    const perRound = NODES * Array.from({ length: perNode }, (_, i) => i).filter(CHANGED).length;
    const wall = (): number => performance.timeOrigin + performance.now();
    const rounds: {
      ms: number;
      publishMs: number;
      firstEventMs: number;
      firstWatcherMs: number;
      serverCpuMs: number;
      controlPlaneCpuMs: number;
      clientCpuMs: number;
      bytes: number;
    }[] = [];
    const profiler = PROFILE === '' ? undefined : await startProfile();
    for (let r = 0; r < CHANGE_ROUNDS; r++) {
      // the probe entry goes back as part of the first round: one more event on node 0
      clients.send({ type: 'await', expected: perRound + (r === 0 ? 1 : 0) });
      const cpu0 = process.cpuUsage();
      const cp0 = controlPlaneCpuMs(cp.dir);
      const t0 = wall();
      await publishAll((i) => (CHANGED(i) ? `Round${r}` : undefined));
      const publishMs = wall() - t0;
      const d = await clients.delivered();
      const cpu = process.cpuUsage(cpu0);
      rounds.push({
        ms: d.allDoneAt - t0,
        publishMs,
        firstEventMs: d.firstEventAt - t0,
        firstWatcherMs: d.firstWatchDoneAt - t0,
        serverCpuMs: (cpu.user + cpu.system) / 1000,
        controlPlaneCpuMs: controlPlaneCpuMs(cp.dir) - cp0,
        clientCpuMs: d.cpuMs,
        bytes: d.bytes,
      });
    }
    if (profiler) writeFileSync(PROFILE, JSON.stringify(await profiler.stop()));
    const clientPid = clients.pid;
    const clientCpuTotal = processCpuMs(clientPid);
    await clients.stop();
    const roundMs = rounds.map((x) => x.ms);
    const median = (pick: (x: (typeof rounds)[number]) => number): number => p50(rounds.map(pick));
    const watcherHeapPer = Math.round((heapWatchers - heapW0) / WATCHERS);
    const eventsPerS = (WATCHERS * perRound) / (p50(roundMs) / 1000);

    // idle: nothing changes on the nodes; who writes to etcd meanwhile (our server must not)
    const writes = async (): Promise<number> =>
      (await metric(api, 'apiserver_request_total', 'verb="POST"')) +
      (await metric(api, 'apiserver_request_total', 'verb="PUT"')) +
      (await metric(api, 'apiserver_request_total', 'verb="PATCH"')) +
      (await metric(api, 'apiserver_request_total', 'verb="APPLY"')) +
      (await metric(api, 'apiserver_request_total', 'verb="DELETE"'));
    const w1 = await writes();
    const i0 = performance.now();
    await new Promise((r) => setTimeout(r, IDLE_WINDOW_MS));
    const idleWritesPerS = ((await writes()) - w1) / ((performance.now() - i0) / 1000);
    watch.close();
    const kubeRssEnd = apiserverRssBytes(cp);
    await server.stop();

    const stalenessP50 = p50(staleness);
    const stalenessP99 = pct(staleness, 0.99);
    const mb = (b: number): string => (b / 1e6).toFixed(0);
    console.log(
      `${total} sandboxes on ${NODES} nodes x ${perNode}; inventories ${mb(inventoryBytes)} MB (largest ${(largest / 1e6).toFixed(2)} MB of the 1.5 MiB request limit), published in ${(publishMs / 1000).toFixed(0)} s`,
    );
    console.log(`${'measure'.padEnd(44)}${'value'.padStart(14)}`);
    const line = (k: string, v: string): void => console.log(`${k.padEnd(44)}${v.padStart(14)}`);
    line('etcd objects of ours (inventories; no pools)', String(etcdObjects));
    line('etcd data directory (MB)', mb(etcdBytes));
    line('kube-apiserver RSS: after publish (MB)', mb(kubeRssBefore));
    line('kube-apiserver RSS: after the lists (MB)', mb(kubeRssAfterLists));
    line('kube-apiserver RSS: at the end (MB)', mb(kubeRssEnd));
    line('sandbox-apiserver sync from start (ms)', syncMs.toFixed(0));
    line('sandbox-apiserver heap per sandbox (B)', String(heapPer));
    line('paged list, limit 500 (ms)', list500.ms.toFixed(0));
    line('paged list, limit 5000 (ms)', list5000.ms.toFixed(0));
    line(`list by node, ${node7.items} items (ms)`, node7.ms.toFixed(0));
    line(`list by label phase=Paused, ${paused.items} items (ms)`, paused.ms.toFixed(0));
    line('get, p50 of 20 (ms)', p50(getTimes).toFixed(1));
    line(`watch: ${initial} initial events to the bookmark (ms)`, initialEnd.toFixed(0));
    line(`staleness inventory write -> event, p50 (ms)`, stalenessP50.toFixed(0));
    line(`staleness inventory write -> event, p99 (ms)`, stalenessP99.toFixed(0));
    line(`${WATCHERS} watchers: heap per watcher (B)`, String(watcherHeapPer));
    line(`${WATCHERS} watchers: 1 % changed per round (ms)`, p50(roundMs).toFixed(0));
    line(`${WATCHERS} watchers: events delivered/s`, eventsPerS.toFixed(0));
    line('  round: inventories written (ms)', median((x) => x.publishMs).toFixed(0));
    line('  round: first event at a watcher (ms)', median((x) => x.firstEventMs).toFixed(0));
    line('  round: first watcher had all (ms)', median((x) => x.firstWatcherMs).toFixed(0));
    line('  round: every watcher had all (ms)', median((x) => x.ms).toFixed(0));
    line('  round CPU: server + publisher (ms)', median((x) => x.serverCpuMs).toFixed(0));
    line('  round CPU: kube-apiserver + etcd (ms)', median((x) => x.controlPlaneCpuMs).toFixed(0));
    line("  round CPU: the watchers' process (ms)", median((x) => x.clientCpuMs).toFixed(0));
    line('  round: bytes to the watchers (MB)', (median((x) => x.bytes) / 1e6).toFixed(0));
    line(`etcd writes/s idle, all writers (${IDLE_WINDOW_MS / 1000} s)`, idleWritesPerS.toFixed(2));
    line(`inventory update as entry objects: CPU (ms)`, forms.entries.cpuMs.toFixed(0));
    line(`inventory update as rows: CPU (ms)`, forms.rows.cpuMs.toFixed(0));
    line(`  rows / entry objects, CPU`, formRatio.toFixed(2));
    line(`inventory update as entry objects: wall (ms)`, forms.entries.ms.toFixed(0));
    line(`inventory update as rows: wall (ms)`, forms.rows.ms.toFixed(0));
    const checks: [string, boolean][] = [
      ['list at limit 500 has every sandbox', list500.items === total],
      ['list at limit 5000 has every sandbox', list5000.items === total],
      ["list by node has the node's sandboxes", node7.items === perNode],
      ['list by label has the Paused sandboxes', paused.items === expectedPaused],
      ['every get answered 200', getOk],
      ['the watch-list had every sandbox', initial === total],
      ['etcd holds one object per node', etcdObjects === NODES],
      ...rounds.map((x, i): [string, boolean] => [
        `round ${i}: 0 < first event (${x.firstEventMs.toFixed(0)} ms) <= first watcher done (${x.firstWatcherMs.toFixed(0)} ms) <= last (${x.ms.toFixed(0)} ms), bytes ${x.bytes} > 0`,
        x.firstEventMs > 0 && x.firstEventMs <= x.firstWatcherMs && x.firstWatcherMs <= x.ms && x.bytes > 0,
      ]),
      ['both inventory forms were measured', forms.rows.cpuMs > 0 && forms.entries.cpuMs > 0],
    ];
    const failed = checks.filter(([, pass]) => !pass).map(([what]) => what);
    const ok = failed.length === 0;
    if (!ok) console.log(`failed: ${failed.join('; ')}`);
    console.log(
      `every list returned what it should: ${ok} (limit 500 ${list500.items}, limit 5000 ${list5000.items}, node ${node7.items}/${perNode}, label ${paused.items}/${expectedPaused}, watch ${initial}/${total}, gets ${getOk})`,
    );
    console.log(
      JSON.stringify({
        sandboxes: total,
        nodes: NODES,
        list_ms: Math.round(list500.ms),
        list_5000_ms: Math.round(list5000.ms),
        list_by_node_ms: Math.round(node7.ms),
        list_by_label_ms: Math.round(paused.ms),
        get_p50_ms: Number(p50(getTimes).toFixed(2)),
        heap_bytes_per_sandbox: heapPer,
        etcd_objects: etcdObjects,
        etcd_bytes: etcdBytes,
        kube_apiserver_rss_bytes: kubeRssEnd,
        watch_initial_events: initial,
        watch_initial_ms: Math.round(initialEnd),
        staleness_p50_ms: Math.round(stalenessP50),
        staleness_p99_ms: Math.round(stalenessP99),
        idle_etcd_writes_per_s: Number(idleWritesPerS.toFixed(2)),
        watchers: WATCHERS,
        watcher_heap_bytes: watcherHeapPer,
        watch_events_per_s: Math.round(eventsPerS),
        change_round_ms: Math.round(p50(roundMs)),
        round_publish_ms: Math.round(median((x) => x.publishMs)),
        round_first_event_ms: Math.round(median((x) => x.firstEventMs)),
        round_first_watcher_ms: Math.round(median((x) => x.firstWatcherMs)),
        round_server_cpu_ms: Math.round(median((x) => x.serverCpuMs)),
        round_control_plane_cpu_ms: Math.round(median((x) => x.controlPlaneCpuMs)),
        round_watchers_cpu_ms: Math.round(median((x) => x.clientCpuMs)),
        round_bytes: Math.round(median((x) => x.bytes)),
        watchers_process_cpu_ms: Math.round(clientCpuTotal),
        inventory_form: 'rows',
        inventory_update_cpu_ms_rows: Math.round(forms.rows.cpuMs),
        inventory_update_cpu_ms_entries: Math.round(forms.entries.cpuMs),
        inventory_update_cpu_ratio: Number(formRatio.toFixed(3)),
        inventory_update_ms_rows: Math.round(forms.rows.ms),
        inventory_update_ms_entries: Math.round(forms.entries.ms),
      }),
    );
    if (!ok) process.exitCode = 1;
  } finally {
    await cp.stop();
  }
}

runBench(main);
