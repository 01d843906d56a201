// bench:list — lists of `sandboxes` served from node inventories against the design users
// would otherwise pick, one custom resource per sandbox in etcd, on the same control plane in
// the same run: kubectl -o json, kubectl table output, and paged lists (limit 500 and 5,000) by
// a kept-alive HTTPS client. Also splits our page time into the aggregator's proxy, the JSON
// encoding and the rest of our handler; and the table output into our whole Table (served in one
// response whatever kubectl's limit) and kubectl's own decoding and printing. Prints a table, then JSON.
import { execFile } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { applyObject, CrdResource } from '@sandbox-scale/kube-runtime';
import { applyCrds, eventually, freePort, startControlPlane } from '@sandbox-scale/e2e';
import { RESOURCES, synthesizeSandbox, type InventoryEntry } from '@sandbox-scale/scale-core';
import { httpsClient, p50, registerApiService, startBenchApiserver, writeServingCert, type Client } from './aggregated-server';
import { runBench } from './run-bench';

const run = promisify(execFile);
const NODES = Number(process.env.BENCH_NODES ?? 40);
const SANDBOXES = Number(process.env.BENCH_SANDBOXES ?? 100_000);
/** kubectl over 100k objects takes about a minute per run, so fewer runs than the paged lists. */
const KUBECTL_RUNS = Number(process.env.BENCH_KUBECTL_RUNS ?? 2);
const PAGED_RUNS = Number(process.env.BENCH_PAGED_RUNS ?? 3);
/** kubectl -o json --chunk-size=0, once each by default: the slowest of the kubectl runs. */
const WHOLE_RUNS = Number(process.env.BENCH_WHOLE_RUNS ?? 1);
const CREATE_CONCURRENCY = 32;
const NAMESPACES = 20;
const CRD_GROUP = 'bench.agents.x-k8s.io';
const CRD_PLURAL = 'benchsandboxes';
const OURS = '/apis/agents.x-k8s.io/v1beta1/sandboxes';
const THEIRS = `/apis/${CRD_GROUP}/v1/${CRD_PLURAL}`;
const TABLE_ACCEPT = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json';

const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
const gc = (): void => (globalThis as { gc?: () => void }).gc?.();

interface Paged {
  readonly ms: number;
  readonly items: number;
  readonly pages: number[];
}

/** Every page of a list at `limit`, following continue tokens; each page's time kept. */
async function pagedList(api: Client, path: string, limit: number): Promise<Paged> {
  const t0 = performance.now();
  const pages: number[] = [];
  let items = 0;
  let cont = '';
  do {
    const p0 = performance.now();
    const r = await api('GET', `${path}?limit=${limit}${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`);
    pages.push(performance.now() - p0);
    if (r.status !== 200) throw new Error(`GET ${path} answered ${r.status}: ${r.body.slice(0, 300)}`);
    const page = JSON.parse(r.body) as { items: unknown[]; metadata: { continue?: string } };
    items += page.items.length;
    cont = page.metadata.continue ?? '';
  } while (cont !== '');
  return { ms: performance.now() - t0, items, pages };
}

function entriesOf(n: number, perNode: number): InventoryEntry[] {
  return Array.from({ length: perNode }, (_, i) => ({
    name: `team-${i % NAMESPACES}/sb-${n}-${i}`,
    id: `sb_${n.toString(16)}${i.toString(16).padStart(8, '0')}`,
    phase: 'Running',
    claimRef: `team-${i % NAMESPACES}/sb-${n}-${i}`,
    addr: `10.${n}.${(i >> 8) & 255}.${i & 255}:7777`,
    deadline: '2030-01-01T00:00:00Z',
    claimedAt: '2026-01-01T00:00:00Z',
  }));
}

/** The Sandbox-shaped CRD: no status subresource, so status is stored with the object. */
function sandboxLikeCrd(): { apiVersion: string; kind: string; metadata: { name: string }; spec: Record<string, unknown> } {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${CRD_PLURAL}.${CRD_GROUP}` },
    spec: {
      group: CRD_GROUP,
      scope: 'Namespaced',
      names: { plural: CRD_PLURAL, singular: 'benchsandbox', kind: 'BenchSandbox', listKind: 'BenchSandboxList' },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
        },
      ],
    },
  };
}

/** The same object our server serves for an entry, as a custom resource (server-set fields left out). */
function crdObjectOf(node: string, e: InventoryEntry): Record<string, unknown> {
  const s = synthesizeSandbox(node, e, { resourceVersion: '' });
  const { uid: _u, resourceVersion: _r, creationTimestamp: _c, ...metadata } = s.metadata;
  return { ...s, apiVersion: `${CRD_GROUP}/v1`, kind: 'BenchSandbox', metadata };
}

async function main(): Promise<void> {
  const cp = await startControlPlane({ controllerManager: false });
  const kubectl = (args: string[]) =>
    run(join(cp.binDir, 'kubectl'), args, { env: { ...process.env, KUBECONFIG: cp.kubeconfigPath }, maxBuffer: 1 << 30 });
  try {
    await applyCrds(cp.kubeConfig, 'charts/sandbox-scale/crds');
    const api = await httpsClient(cp.kubeConfig, CREATE_CONCURRENCY);
    const perNode = Math.ceil(SANDBOXES / NODES);
    let inventoryBytes = 0;
    for (let n = 0; n < NODES; n++) {
      const node = `bench-node-${n}`;
      const body = {
        apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
        kind: 'NodeInventory',
        metadata: { name: node },
        node,
        address: `127.0.0.1:1`,
        entries: entriesOf(n, perNode),
      };
      inventoryBytes += JSON.stringify(body).length;
      await applyObject(cp.kubeConfig, body, { fieldManager: 'bench', force: true, resource: RESOURCES.nodeInventory });
    }

    // the etcd-backed baseline: one custom resource per sandbox, the same objects
    await applyObject(cp.kubeConfig, sandboxLikeCrd(), { fieldManager: 'bench', force: true, resource: CrdResource });
    await eventually(
      async () => {
        if ((await api('GET', THEIRS)).status !== 200) throw new Error('the baseline CRD never became established');
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    for (let ns = 0; ns < NAMESPACES; ns++) {
      const r = await api('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: `team-${ns}` } });
      if (r.status !== 201 && r.status !== 409) throw new Error(`namespace create answered ${r.status}`);
    }
    const c0 = performance.now();
    let crdBytes = 0;
    for (let n = 0; n < NODES; n++) {
      const node = `bench-node-${n}`;
      const queue = entriesOf(n, perNode);
      const worker = async (): Promise<void> => {
        for (let e = queue.pop(); e !== undefined; e = queue.pop()) {
          const obj = crdObjectOf(node, e);
          crdBytes += JSON.stringify(obj).length;
          const ns = obj.metadata as { namespace: string };
          const r = await api('POST', `/apis/${CRD_GROUP}/v1/namespaces/${ns.namespace}/${CRD_PLURAL}`, obj);
          if (r.status !== 201 && r.status !== 409) throw new Error(`create answered ${r.status}: ${r.body.slice(0, 300)}`);
        }
      };
      await Promise.all(Array.from({ length: CREATE_CONCURRENCY }, worker));
    }
    const createMs = performance.now() - c0;

    const cert = await writeServingCert('bench-list');
    const port = await freePort();
    gc();
    const heapBefore = process.memoryUsage().heapUsed;
    const server = await startBenchApiserver(cp.kubeConfig, cert, port);
    gc();
    const heapAfter = process.memoryUsage().heapUsed;
    await registerApiService(kubectl, api, { name: 'bench-list', port, caCert: cert.caCert });
    // the same server without the aggregator in front: its answer alone
    const direct = await httpsClient(cp.kubeConfig, 1, { url: server.url, ca: cert.caCert });
    // warm both paths (TLS handshakes, the authorization cache) before anything is timed
    for (const path of [OURS, THEIRS]) await pagedList(api, path, 5000);
    await pagedList(direct, OURS, 5000);

    const timed = async (args: string[]): Promise<{ ms: number; out: string }> => {
      const t0 = performance.now();
      const out = await kubectl(args);
      return { ms: performance.now() - t0, out: out.stdout };
    };
    const kubectlJson: number[] = [];
    const crdKubectlJson: number[] = [];
    const table: number[] = [];
    const crdTable: number[] = [];
    const raw: number[] = [];
    const jsonWhole: number[] = [];
    const crdJsonWhole: number[] = [];
    let count = 0;
    let crdCount = 0;
    let tableRows = 0;
    let decodeMs = 0;
    for (let i = 0; i < KUBECTL_RUNS; i++) {
      const ours = await timed(['get', 'sandboxes', '-A', '-o', 'json']);
      kubectlJson.push(ours.ms);
      const theirs = await timed(['get', CRD_PLURAL, '-A', '-o', 'json']);
      crdKubectlJson.push(theirs.ms);
      if (i === 0) {
        const d0 = performance.now();
        count = (JSON.parse(ours.out) as { items: unknown[] }).items.length;
        decodeMs = performance.now() - d0;
        crdCount = (JSON.parse(theirs.out) as { items: unknown[] }).items.length;
      }
      const t = await timed(['get', 'sandboxes', '-A']);
      table.push(t.ms);
      tableRows = t.out.trimEnd().split('\n').length - 1;
      crdTable.push((await timed(['get', CRD_PLURAL, '-A'])).ms);
      raw.push((await timed(['get', 'nodeinventories', '-o', 'json'])).ms);
    }
    // one request instead of pages of 500: kubectl's client throttle (5/s after a burst of 10) out of the way
    for (let i = 0; i < WHOLE_RUNS; i++) {
      jsonWhole.push((await timed(['get', 'sandboxes', '-A', '-o', 'json', '--chunk-size=0'])).ms);
      crdJsonWhole.push((await timed(['get', CRD_PLURAL, '-A', '-o', 'json', '--chunk-size=0'])).ms);
    }

    const paged = {
      ours500: [] as Paged[],
      crd500: [] as Paged[],
      ours5000: [] as Paged[],
      crd5000: [] as Paged[],
      direct500: [] as Paged[],
      direct5000: [] as Paged[],
    };
    for (let i = 0; i < PAGED_RUNS; i++) {
      paged.ours500.push(await pagedList(api, OURS, 500));
      paged.crd500.push(await pagedList(api, THEIRS, 500));
      paged.ours5000.push(await pagedList(api, OURS, 5000));
      paged.crd5000.push(await pagedList(api, THEIRS, 5000));
      paged.direct500.push(await pagedList(direct, OURS, 500));
      paged.direct5000.push(await pagedList(direct, OURS, 5000));
    }
    // JSON encoding of one page of 500 as our handler does it (parse excluded)
    const page500 = JSON.parse((await direct('GET', `${OURS}?limit=500`)).body) as unknown;
    const e0 = performance.now();
    for (let i = 0; i < 20; i++) JSON.stringify(page500);
    const encodeMs = (performance.now() - e0) / 20;
    // the Table kubectl asks for (limit 500), followed to its end: pages of at least 25,000 rows; direct and through the aggregator
    const tableServe = { direct: [] as number[], proxied: [] as number[] };
    let tablePageOk = true;
    let tableBytes = 0;
    let tablePages = 0;
    for (let i = 0; i < PAGED_RUNS; i++) {
      for (const [client, into] of [
        [direct, tableServe.direct],
        [api, tableServe.proxied],
      ] as const) {
        const t0 = performance.now();
        let rows = 0;
        let bytes = 0;
        let pages = 0;
        let cont = '';
        do {
          const r = await client('GET', `${OURS}?limit=500${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`, undefined, TABLE_ACCEPT);
          const t = JSON.parse(r.body) as { rows: unknown[]; metadata: { continue?: string } };
          tablePageOk &&= r.status === 200;
          rows += t.rows.length;
          bytes += r.body.length;
          pages++;
          cont = t.metadata.continue ?? '';
        } while (cont !== '');
        into.push(performance.now() - t0);
        tableBytes = bytes;
        tablePages = pages;
        tablePageOk &&= rows === count;
      }
    }
    const tableServeP50 = p50(tableServe.proxied);
    await server.stop();

    const ms = (xs: Paged[]): number => p50(xs.map((x) => x.ms));
    const pageP50 = (xs: Paged[]): number => p50(xs.flatMap((x) => x.pages));
    const pagedItems =
      [...paged.ours500, ...paged.ours5000].every((p) => p.items === count) &&
      [...paged.crd500, ...paged.crd5000].every((p) => p.items === crdCount);
    const list500 = ms(paged.ours500);
    const crd500 = ms(paged.crd500);
    const list5000 = ms(paged.ours5000);
    const crd5000 = ms(paged.crd5000);
    const kubectlP50 = p50(kubectlJson);
    const crdKubectlP50 = p50(crdKubectlJson);
    const rawP50 = p50(raw);
    const tableP50 = p50(table);
    const heapPer = Math.round((heapAfter - heapBefore) / Math.max(1, count));
    const perPage500 = pageP50(paged.ours500);
    const directPage500 = pageP50(paged.direct500);
    const round = (x: number, d = 3): number => Number(x.toFixed(d));
    const row = (label: string, ours: number, theirs: number): string =>
      `${label.padEnd(26)}${ours.toFixed(0).padStart(9)}${theirs.toFixed(0).padStart(12)}${(ours / theirs).toFixed(2).padStart(9)}`;
    console.log(
      `sandboxes ${count} on ${NODES} nodes x ${perNode} (inventories ${(inventoryBytes / 1e6).toFixed(1)} MB); baseline ${crdCount} custom resources (${(crdBytes / 1e6).toFixed(1)} MB of JSON, created in ${(createMs / 1000).toFixed(0)} s)`,
    );
    console.log(`${'p50 wall (ms)'.padEnd(26)}${'ours'.padStart(9)}${'etcd CRD'.padStart(12)}${'ratio'.padStart(9)}`);
    console.log(row('paged list, limit 500', list500, crd500));
    console.log(row('paged list, limit 5000', list5000, crd5000));
    console.log(row('kubectl get -A -o json', kubectlP50, crdKubectlP50));
    console.log(row('kubectl get -A (table)', tableP50, p50(crdTable)));
    console.log(row('kubectl -o json chunk 0', p50(jsonWhole), p50(crdJsonWhole)));
    console.log(`raw read of the inventories   ${rawP50.toFixed(0)} ms   (kubectl -o json / raw ${(kubectlP50 / rawP50).toFixed(2)})`);
    // kubectl pages at 500 too: what it takes beyond the same paged list is its own decoding and printing
    console.log(
      `kubectl's own share of -o json: ${(kubectlP50 - list500).toFixed(0)} ms of ${kubectlP50.toFixed(0)} ours (${((1 - list500 / kubectlP50) * 100).toFixed(0)} %), ${(crdKubectlP50 - crd500).toFixed(0)} ms of ${crdKubectlP50.toFixed(0)} etcd CRD; parsing that output once here takes ${decodeMs.toFixed(0)} ms`,
    );
    console.log(
      `one page of 500, p50 (ms): through the aggregator ${perPage500.toFixed(1)}, direct to our server ${directPage500.toFixed(1)} (proxy ${(perPage500 - directPage500).toFixed(1)}), of which JSON encoding ${encodeMs.toFixed(1)}, handler and TLS ${(directPage500 - encodeMs).toFixed(1)}; etcd CRD page ${pageP50(paged.crd500).toFixed(1)}`,
    );
    console.log(
      `table output: our Table (${count} rows in ${tablePages} pages, ${(tableBytes / 1e6).toFixed(1)} MB) through the aggregator ${tableServeP50.toFixed(0)} ms, direct ${p50(tableServe.direct).toFixed(0)} ms; kubectl's own decoding and printing ${(tableP50 - tableServeP50).toFixed(0)} ms of ${tableP50.toFixed(0)} (${((1 - tableServeP50 / tableP50) * 100).toFixed(0)} %)`,
    );
    console.log(
      `one page of 5000, p50 (ms): through the aggregator ${pageP50(paged.ours5000).toFixed(1)}, direct ${pageP50(paged.direct5000).toFixed(1)}; etcd CRD page ${pageP50(paged.crd5000).toFixed(1)}`,
    );
    console.log(
      `runs (ms) ours500 ${paged.ours500.map((p) => p.ms.toFixed(0)).join(' ')} crd500 ${paged.crd500.map((p) => p.ms.toFixed(0)).join(' ')} kubectl ${kubectlJson.map((x) => x.toFixed(0)).join(' ')} crd kubectl ${crdKubectlJson.map((x) => x.toFixed(0)).join(' ')}`,
    );
    console.log(
      `every paged list returned every item: ${pagedItems}; table rows ${tableRows}; table page ok ${tablePageOk}; total page time ${sum(paged.ours500[0]?.pages ?? []).toFixed(0)} ms`,
    );
    console.log(
      `heap / sandbox (B) ${heapPer}; load average ${loadavg()
        .map((x) => x.toFixed(1))
        .join(' ')}`,
    );
    console.log(
      JSON.stringify({
        sandboxes: count,
        crd_objects: crdCount,
        ratio_vs_crd: round(list500 / crd500),
        ratio_vs_crd_5000: round(list5000 / crd5000),
        kubectl_ratio_vs_crd: round(kubectlP50 / crdKubectlP50),
        ratio_vs_raw: round(kubectlP50 / rawP50),
        list_p50_ms: Math.round(list500),
        crd_list_p50_ms: Math.round(crd500),
        list_5000_p50_ms: Math.round(list5000),
        crd_list_5000_p50_ms: Math.round(crd5000),
        kubectl_p50_ms: Math.round(kubectlP50),
        crd_kubectl_p50_ms: Math.round(crdKubectlP50),
        kubectl_own_ms: Math.round(kubectlP50 - list500),
        table_ms: Math.round(tableP50),
        crd_table_ms: Math.round(p50(crdTable)),
        table_serve_ms: Math.round(tableServeP50),
        table_serve_direct_ms: Math.round(p50(tableServe.direct)),
        kubectl_table_own_ms: Math.round(tableP50 - tableServeP50),
        kubectl_chunk0_ms: Math.round(p50(jsonWhole)),
        crd_kubectl_chunk0_ms: Math.round(p50(crdJsonWhole)),
        page_500_proxy_ms: round(perPage500 - directPage500, 1),
        page_500_encode_ms: round(encodeMs, 1),
        page_500_direct_ms: round(directPage500, 1),
        load_avg_1m: round(loadavg()[0] ?? 0, 1),
        heap_bytes_per_sandbox: heapPer,
      }),
    );
    if (!pagedItems || count !== crdCount || tableRows !== count || !tablePageOk) process.exitCode = 1;
  } finally {
    await cp.stop();
  }
}

runBench(main);
