import { request } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { applyObject, createLogger } from '@sandbox-scale/kube-runtime';
import { buildInventory } from '@sandbox-scale/inventory-publisher';
import { ClaimIndex, NodeInventorySchema, parseObject, statusForError, type NodeInventory } from '@sandbox-scale/scale-core';
import { SandboxdClient, SandboxdClientSet } from '@sandbox-scale/sandboxd-client';
import { startSim, type Sim } from '@sandbox-scale/sandboxd-sim';
import { NODE_INVENTORY_RESOURCE } from '../src/storage/inventory-informer';
import { LifecycleStorage } from '../src/storage/lifecycle-storage';
import { NodeRouter } from '../src/storage/node-router';
import { Revisions } from '../src/storage/revisions';
import { SandboxCache } from '../src/storage/sandbox-cache';
import { SandboxStorage } from '../src/storage/sandbox-storage';
import { installStorages } from '../src/storage/install';
import type { SandboxesREST } from '../src/storage/sandboxes-rest';
import { WatchHub } from '../src/storage/watch-hub';

export const quietLog = createLogger({ name: 'sandbox-apiserver-test', level: 'silent' });

/** One replica's `sandboxes` storage as the tests run it: short grace, a small index and history. */
export function replicaSandboxes(clients: SandboxdClientSet | undefined): SandboxesREST {
  return installStorages({
    clients,
    graceMs: 50,
    overlayTtlMs: 60_000,
    claimIndexMaxBytes: 1 << 20,
    watchHistory: 100,
    rng: Math.random,
    log: quietLog,
  }).sandboxes;
}

export interface SimNodeRef {
  readonly name: string;
  readonly url: string;
  readonly addr: string;
}

/**
 * Writes one NodeInventory per simulated node from what sandboxd reports (GET /v1/sandboxes,
 * GET /v1/info), built by the inventory publisher's own buildInventory: the objects are the
 * publisher's output, phases and all, not a copy of it written for the test.
 */
/**
 * Suites that share one control plane see each other's NodeInventories; a sandbox-apiserver
 * started with `inventorySelector: suiteSelector(suffix)` serves only its own suite's nodes
 * (a verb that asks every node, such as snapshots, would otherwise reach a node of another
 * suite that refuses this suite's fleet token).
 */
const SUITE_LABEL = 'sandbox-scale.test/suite';
export const suiteLabels = (suffix: string): Record<string, string> => ({ [SUITE_LABEL]: suffix });
export const suiteSelector = (suffix: string): string => `${SUITE_LABEL}=${suffix}`;

export async function publishInventories(kc: KubeConfig, nodes: readonly SimNodeRef[], token: string, suffix: string): Promise<void> {
  for (const n of nodes) {
    const client = new SandboxdClient({ baseUrl: n.url, token });
    const [rows, info] = await Promise.all([client.sandboxes(), client.info()]);
    await client.close();
    const body = buildInventory({ node: `${n.name}-${suffix}`, address: n.addr, rows, info, now: new Date(), labels: suiteLabels(suffix) });
    await applyObject(kc, body, { fieldManager: 'sandbox-scale/test-publisher', force: true, resource: NODE_INVENTORY_RESOURCE });
  }
}

/**
 * The NodeInventory the publisher would write for a node right now (optionally only the given
 * sandbox ids), as the informer would hand it to the view.
 */
export async function publishedInventory(
  client: SandboxdClient,
  node: string,
  address: string,
  ids?: ReadonlySet<string>,
): Promise<NodeInventory> {
  const [rows, info] = await Promise.all([client.sandboxes(), client.info()]);
  const body = buildInventory({ node, address, rows: ids === undefined ? rows : rows.filter((r) => ids.has(r.id)), info, now: new Date() });
  return parseObject(NodeInventorySchema, { ...body, metadata: { ...body.metadata, resourceVersion: '1' } });
}

export interface RawReply {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

/** A direct HTTPS call to the server (bypassing kube-apiserver), with kc's client credentials or none. */
export function direct(url: string, opts: { method?: string; body?: unknown; kc?: KubeConfig; ca: string }): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const https: { cert?: string | Buffer; key?: string | Buffer } = {};
    if (opts.kc) {
      const user = opts.kc.getCurrentUser();
      if (user?.certData) https.cert = Buffer.from(user.certData, 'base64');
      if (user?.keyData) https.key = Buffer.from(user.keyData, 'base64');
    }
    const req = request(
      {
        hostname: u.hostname,
        port: u.port,
        path: `${u.pathname}${u.search}`,
        method: opts.method ?? 'GET',
        ca: opts.ca,
        servername: 'localhost',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        ...https,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(opts.body === undefined ? undefined : JSON.stringify(opts.body));
  });
}

/** One simulated node with a warm pool, and storages over it as a fresh sandbox-apiserver would build them. */
export interface StorageFleet {
  readonly sim: Sim;
  readonly clients: SandboxdClientSet;
  /** The node's own client, to claim and inspect behind the storage's back. */
  readonly direct: SandboxdClient;
  readonly node: string;
  /**
   * A fresh storage (and its lifecycle verbs) over the node, with `names` claimed in `namespace`
   * and published to its cache; `ids` in the order of `names`.
   */
  storageWith(
    namespace: string,
    names: readonly string[],
  ): Promise<{ lifecycle: LifecycleStorage; storage: SandboxStorage; ids: string[] }>;
  stop(): Promise<void>;
}

export async function startStorageFleet(opts: { token: string; template: string; warm: number }): Promise<StorageFleet> {
  const sim = await startSim({ nodes: 1, speed: 0, token: opts.token, pools: [{ template: opts.template, warm: opts.warm }] });
  const node = sim.nodes[0]?.name ?? '';
  sim.node(node).tick();
  const clients = new SandboxdClientSet({ token: opts.token });
  const direct = clients.forNode(sim.nodes[0]?.url ?? '');
  return {
    sim,
    clients,
    direct,
    node,
    async storageWith(namespace, names) {
      const revisions = new Revisions();
      const cache = new SandboxCache({ graceMs: 50, hub: new WatchHub(10), revisions });
      const storage = new SandboxStorage(cache, new ClaimIndex({ maxBytes: 1 << 20 }), new NodeRouter(cache, clients), revisions);
      const ids: string[] = [];
      for (const name of names) ids.push((await direct.claim({ template: opts.template, claimRef: `${namespace}/${name}` })).id);
      cache.upsertInventory(await publishedInventory(direct, node, sim.nodes[0]?.addr ?? '', new Set(ids)));
      return { lifecycle: new LifecycleStorage(storage), storage, ids };
    },
    async stop() {
      await clients.close();
      await sim.stop();
    },
  };
}

/** The Status the server would answer for a rejected promise; a promise that resolves fails the test. */
export async function statusOf(p: Promise<unknown>): Promise<ReturnType<typeof statusForError>> {
  try {
    await p;
  } catch (err) {
    return statusForError(err);
  }
  throw new Error('expected the call to fail');
}
