import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { request, type RequestOptions } from 'node:https';
import { join } from 'node:path';
import { applyObject } from '@sandbox-scale/kube-runtime';
import {
  applyCrds,
  createTestNamespace,
  eventually,
  freePort,
  kubectl,
  runSuffix,
  startControlPlane,
  testBinDir,
  type ControlPlane,
} from '@sandbox-scale/e2e';
import { EXTENSIONS_API_VERSION, SANDBOX_PHASES, type InventoryEntry, OwnerRefKey } from '@sandbox-scale/scale-core';
import { startSandboxApiserver, type RunningSandboxApiserver } from '../src';
import { NODE_INVENTORY_RESOURCE } from '../src/storage/inventory-informer';
import { INITIAL_EVENTS_END } from '../src/watch/watch-stream';
import { API_SERVICE, registerApiService, writeServingCert } from './aggregator-fixture';
import { quietLog } from './fleet-fixture';

/**
 * 100,000 sandboxes (50 NodeInventories of 2,000 entries in etcd) watched through the
 * aggregator as a user would: a watch-list (sendInitialEvents, as client-go's WatchListClient
 * asks) gets every ADDED, the initial-events-end bookmark and then live changes, and
 * `kubectl get sandboxes -A -w` prints every sandbox. A private control plane: the APIService
 * is cluster-wide, and 25 MB of inventories have no place in the shared cluster.
 */

const NODES = 50;
const PER_NODE = 2_000;
const SANDBOXES = NODES * PER_NODE;
const CHANGED = 20;
const BASE = '/apis/agents.x-k8s.io/v1beta1';
const suffix = runSuffix();

let cp: ControlPlane;
let server: RunningSandboxApiserver;

function entries(node: number, hibernated = 0): InventoryEntry[] {
  return Array.from({ length: PER_NODE }, (_, i) => {
    const name = `wl-${i % 40}/sb-${node}-${i}`;
    return {
      name,
      id: `sb_${node}_${i}`,
      phase: i < hibernated ? SANDBOX_PHASES.hibernated : SANDBOX_PHASES.running,
      claimRef: name,
      addr: `10.${node}.${(i >> 8) & 255}.${i & 255}:7777`,
      deadline: '2030-01-01T00:00:00Z',
      claimedAt: '2026-01-01T00:00:00Z',
    };
  });
}

async function publishNode(node: number, hibernated = 0): Promise<void> {
  const name = `wl-node-${node}`;
  await applyObject(
    cp.kubeConfig,
    {
      apiVersion: EXTENSIONS_API_VERSION,
      kind: 'NodeInventory',
      metadata: { name },
      node: name,
      address: `10.${node}.0.1:7777`,
      entries: entries(node, hibernated),
    },
    { fieldManager: 'sandbox-scale/test-publisher', force: true, resource: NODE_INVENTORY_RESOURCE },
  );
}

beforeAll(async () => {
  cp = await startControlPlane({ controllerManager: false });
  await applyCrds(cp.kubeConfig, 'charts/sandbox-scale/crds');
  const ns = await createTestNamespace(cp.kubeConfig, 'sbwl');
  for (let n = 0; n < NODES; n++) await publishNode(n);
  const files = await writeServingCert(`wl-${suffix}`, ns);
  const port = await freePort();
  server = await startSandboxApiserver({
    claimRefKey: new OwnerRefKey(randomBytes(32)),
    kubeConfig: cp.kubeConfig,
    securePort: port,
    bindAddress: '127.0.0.1',
    tlsCertFile: files.cert,
    tlsPrivateKeyFile: files.key,
    log: quietLog,
  });
  await server.synced;
  await registerApiService({ namespace: ns, port, caPem: files.caPem, kubeconfig: cp.kubeconfigPath });
  await eventually(
    async () => {
      const r = await kubectl(['get', 'apiservice', API_SERVICE, '-o', 'jsonpath={.status.conditions[?(@.type=="Available")].status}'], {
        kubeconfig: cp.kubeconfigPath,
      });
      expect(r.stdout).toBe('True');
    },
    { timeoutMs: 60_000 },
  );
}, 300_000);

afterAll(async () => {
  await server?.stop();
  await cp?.stop();
});

describe('watching 100,000 sandboxes through the aggregator', () => {
  it('streams a watch-list: every ADDED, the initial-events-end bookmark, then live changes', async () => {
    const opts: RequestOptions = { method: 'GET', headers: { accept: 'application/json' } };
    await cp.kubeConfig.applyToHTTPSOptions(opts);
    const url = new URL(
      `${cp.kubeConfig.getCurrentCluster()?.server ?? ''}${BASE}/sandboxes?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=300`,
    );
    const added = new Set<string>();
    const modified = new Set<string>();
    const order: string[] = [];
    let bytes = 0;
    let status = 0;
    let published: Promise<void> | undefined;
    await new Promise<void>((resolve, reject) => {
      const req = request({ ...opts, hostname: url.hostname, port: url.port, path: `${url.pathname}${url.search}` }, (res) => {
        status = res.statusCode ?? 0;
        let partial = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          bytes += Buffer.byteLength(chunk);
          const lines = (partial + chunk).split('\n');
          partial = lines.pop() ?? '';
          for (const l of lines) {
            const ev = JSON.parse(l) as {
              type: string;
              object: { metadata?: { namespace?: string; name?: string; annotations?: Record<string, string> } };
            };
            const key = `${ev.object.metadata?.namespace ?? ''}/${ev.object.metadata?.name ?? ''}`;
            if (ev.type === 'ADDED') added.add(key);
            if (ev.type === 'MODIFIED') modified.add(key);
            const step = ev.type === 'BOOKMARK' ? (ev.object.metadata?.annotations?.[INITIAL_EVENTS_END] === 'true' ? 'END' : '') : ev.type;
            if (step !== '' && order.at(-1) !== step) order.push(step);
            // once the initial list is through, a node reports a change
            if (step === 'END') published = publishNode(0, CHANGED);
          }
          if (modified.size >= CHANGED) {
            req.destroy();
            resolve();
          }
        });
        res.on('end', () => reject(new Error(`the watch ended after ${added.size} ADDED, ${modified.size} MODIFIED (HTTP ${status})`)));
      });
      req.on('error', (err) => (modified.size >= CHANGED ? resolve() : reject(err)));
      req.end();
    });
    await published;
    process.stdout.write(
      `watch-list-through-aggregator figures ${JSON.stringify({ sandboxes: SANDBOXES, http_status: status, added: added.size, modified_after_end: modified.size, bytes })}\n`,
    );
    expect(status).toBe(200);
    expect(added.size).toBe(SANDBOXES);
    expect(order).toEqual(['ADDED', 'END', 'MODIFIED']);
    expect(modified.size).toBe(CHANGED);
    expect(bytes).toBeGreaterThan(SANDBOXES * 100);
  }, 300_000);

  it('prints every sandbox to kubectl get sandboxes -A -w', async () => {
    let out = '';
    let err = '';
    const proc = spawn(join(testBinDir(), 'kubectl'), ['get', 'sandboxes', '-A', '-w', '-o', 'name'], {
      env: { ...process.env, KUBECONFIG: cp.kubeconfigPath },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    proc.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    proc.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    try {
      const names = await eventually(
        () => {
          const lines = new Set(out.split('\n').filter((l) => l !== ''));
          if (lines.size < SANDBOXES) throw new Error(`kubectl printed ${lines.size}/${SANDBOXES} sandboxes; stderr: ${err.slice(-300)}`);
          return lines.size;
        },
        { timeoutMs: 240_000, intervalMs: 1_000 },
      );
      process.stdout.write(`kubectl-get-A-w figures ${JSON.stringify({ sandboxes: SANDBOXES, printed: names })}\n`);
      expect(names).toBe(SANDBOXES);
      expect(err).toBe('');
    } finally {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await exited;
    }
  }, 300_000);
});
