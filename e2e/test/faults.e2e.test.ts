import { CoreV1Api, CustomObjectsApi, Watch, type KubeConfig } from '@kubernetes/client-node';
import { spawn, type ChildProcess } from 'node:child_process';
import { Agent, request, type RequestOptions } from 'node:https';
import { join } from 'node:path';
import { FAST_PATH_AUDIENCE, NodeInventorySchema, parseObject, servedNameOf } from '@sandbox-scale/scale-core';
import { eventually, kubectl, runSuffix, serviceAccountToken, type RunResult, kubectlOk } from '../src/index';
import { applyWarmPool, itWithNodes, startSuiteSystem, waitPoolReady } from '../src/system/suite-system';
import type { SystemUnderTest } from '../src/system/system-under-test';
import {
  clearSimFaults,
  sandboxdCall,
  sandboxdCounters,
  type SandboxdCounters,
  sandboxdRows,
  setSimFaults,
  type SandboxdNode,
  type SandboxdRow,
} from '../src/testing/sandboxd';
import type { Claim } from '../src/testing/claim-types';
import { sandboxManifest } from '../src/testing/sandbox-manifests';
import { grantTenantRole } from '../src/testing/tenant-role';

// Faults of the whole system, each printing its figures as one JSON line and asserting each of
// them: the claim-controller leader killed mid-burst, a partitioned node, a deleted NodeInventory,
// a restarted sandbox-apiserver under a watch, failing sandboxd replies, hostile request bodies,
// and tokens kept out of sight.

const ns = `t-faults-${runSuffix()}`;
const GROUP = 'extensions.agents.x-k8s.io';
const VERSION = 'v1beta1';
const IMAGE = 'ghcr.io/example/faults-agent:1.0';
const POOL = 'agent';
const POOL_REPLICAS = 60;
const BURST = Number(process.env.FAULTS_BURST ?? 1000);
const HOSTILE_SECONDS = Number(process.env.FAULTS_HOSTILE_SECONDS ?? 200);

let sys: SystemUnderTest;
let custom: CustomObjectsApi;
let clientToken: string;
// the fast path accepts only tokens issued for its own audience
let fastPathToken: string;
let ca: string;
const agent = new Agent({ keepAlive: true, maxSockets: 16 });

function figures(fig: Record<string, unknown>): void {
  console.log(JSON.stringify(fig));
}

function k(args: string[], input?: string): Promise<RunResult> {
  return kubectlOk(args, { kubeconfig: sys.kubeconfigPath, input });
}

function isBound(c: Claim): boolean {
  return c.status?.conditions?.some((x) => x.type === 'Bound' && x.status === 'True') ?? false;
}

async function listClaims(): Promise<Claim[]> {
  const res = (await custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: ns, plural: 'sandboxclaims' })) as {
    items: Claim[];
  };
  return res.items;
}

async function createClaim(name: string): Promise<void> {
  await custom.createNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace: ns,
    plural: 'sandboxclaims',
    body: {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: 'SandboxClaim',
      metadata: { name, namespace: ns },
      spec: { warmPoolRef: { name: POOL } },
    },
  });
}

async function waitBound(names: string[], timeoutMs: number, onPoll?: (bound: number) => void, intervalMs = 1000): Promise<Claim[]> {
  return eventually(
    async () => {
      const byName = new Map((await listClaims()).map((c) => [c.metadata.name, c]));
      const unbound = names.filter((n) => {
        const c = byName.get(n);
        return !c || !isBound(c);
      });
      onPoll?.(names.length - unbound.length);
      if (unbound.length > 0)
        throw new Error(`${unbound.length}/${names.length} claims not Bound yet (e.g. ${unbound.slice(0, 3).join(', ')})`);
      return names.map((n) => byName.get(n) as Claim);
    },
    { timeoutMs, intervalMs },
  );
}

const sim = (node: SandboxdNode, path: string, init: { method?: string; body?: unknown } = {}): Promise<Response> =>
  sandboxdCall(node, path, init);
const setFaults = (node: SandboxdNode, faults: Record<string, unknown>): Promise<void> => setSimFaults(node, faults);
const clearFaults = (node: SandboxdNode): Promise<void> => clearSimFaults(node);
const simRows = (node: SandboxdNode): Promise<SandboxdRow[]> => sandboxdRows(node);
const simCounters = (nodes: readonly SandboxdNode[] = sys.nodes): Promise<SandboxdCounters> => sandboxdCounters(nodes);

interface HttpReply {
  status: number;
  text: string;
}

/** One HTTPS request with the given CA and auth (bearer token or a KubeConfig's client cert). */
function httpsRequest(
  url: string,
  method: string,
  body: string | Buffer | undefined,
  auth: { token?: string; kc?: KubeConfig },
  contentType = 'application/json',
): Promise<HttpReply> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const opts: RequestOptions = {
      method,
      hostname: u.hostname,
      port: u.port,
      path: `${u.pathname}${u.search}`,
      agent,
      headers: { 'content-type': contentType, accept: 'application/json' },
    };
    const go = (retried = false): void => {
      const req = request(opts, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      });
      req.on('error', (err: NodeJS.ErrnoException) => {
        // A kept-alive socket the server closed just as it was reused fails before the request
        // reaches it: sent once more on a fresh one, as HTTP clients do (Node's documented
        // `reusedSocket` pattern). A reset on a fresh socket is the server's answer and stays one.
        if (!retried && req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) go(true);
        else reject(err);
      });
      req.end(body);
    };
    if (auth.kc) {
      auth.kc.applyToHTTPSOptions(opts).then(() => {
        opts.agent = agent;
        go();
      }, reject);
    } else {
      opts.ca = ca;
      opts.servername = sys.servernameOf(url);
      opts.headers = { ...opts.headers, authorization: `Bearer ${auth.token ?? ''}` };
      go();
    }
  });
}

/** A kubectl process whose stdout is collected until it is stopped. */
function kubectlStream(args: string[]): { out: () => string; err: () => string; proc: ChildProcess; stop: () => Promise<void> } {
  let out = '';
  let err = '';
  const proc = spawn(join(sys.binDir, 'kubectl'), args, {
    env: { ...process.env, KUBECONFIG: sys.kubeconfigPath },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout?.on('data', (c: Buffer) => (out += c.toString('utf8')));
  // read stderr too: an unread pipe would block kubectl once it fills
  proc.stderr?.on('data', (c: Buffer) => (err += c.toString('utf8')));
  const exited = new Promise<void>((res) => proc.once('exit', () => res()));
  return {
    out: () => out,
    err: () => err,
    proc,
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * The events of `kubectl get -w --output-watch-events -o json`. kubectl prints the initial list
 * one page per event when it pages (over 500 items), each event's object being that page's
 * List: spread those into one ADDED event per item.
 */
function watchEvents(text: string): Record<string, unknown>[] {
  return jsonStream(text).flatMap((e) => {
    const items = (e.object as { items?: unknown[] }).items;
    return Array.isArray(items) ? items.map((object) => ({ type: e.type, object })) : [e];
  });
}

/** Parses concatenated pretty-printed JSON objects (kubectl -w -o json). */
function jsonStream(text: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  let depth = 0;
  let start = -1;
  let inStr = false;
  let esc = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (inStr) {
      if (esc) esc = false;
      else if (ch === '\\') esc = true;
      else if (ch === '"') inStr = false;
      continue;
    }
    if (ch === '"') inStr = true;
    else if (ch === '{') {
      if (depth++ === 0) start = i;
    } else if (ch === '}' && --depth === 0) out.push(JSON.parse(text.slice(start, i + 1)) as Record<string, unknown>);
  }
  return out;
}

beforeAll(async () => {
  sys = await startSuiteSystem({
    namespaces: [ns],
    local: {
      nodes: 3,
      speed: 0,
      publishInterval: '1s',
      // the chart's shape: two replicas campaigning for one Lease
      claimControllerReplicas: 2,
      // a node whose claim failed is passed over for 2 s, so each fault mode below meets the faulty node afresh
      extraArgs: {
        'claim-controller': ['--orphan-interval', '5s', '--max-concurrent-reconciles', '32', '--failed-node-cooldown', '2s'],
      },
    },
  });
  custom = sys.kubeConfig.makeApiClient(CustomObjectsApi);
  ca = sys.servingCa;
  await grantTenantRole(sys.kubeConfig, ns, 'client', [
    { apiGroups: [GROUP], resources: ['sandboxclaims'], verbs: ['create', 'get', 'list'] },
    { apiGroups: ['agents.x-k8s.io'], resources: ['sandboxes'], verbs: ['create', 'get', 'list', 'watch'] },
  ]);
  clientToken = (await sys.tenant(ns, 'client')).token;
  fastPathToken = await serviceAccountToken(sys.kubeConfig, ns, 'client', [FAST_PATH_AUDIENCE]);
  await applyWarmPool(sys, ns, { name: POOL, image: IMAGE, replicas: POOL_REPLICAS });
  await waitPoolReady(sys, ns, POOL_REPLICAS, { name: POOL });
}, 300_000);

afterAll(async () => {
  agent.destroy();
  await sys?.stop();
}, 120_000);

describe('sandbox-scale under faults', () => {
  it('binds every claim of a burst once, destroying no VM, when the leading claim-controller replica is killed mid-burst', async () => {
    const leader = await eventually(
      async () => {
        const l = await sys.leaderOf('claimController');
        if (l === undefined) throw new Error('no claim-controller replica leads yet');
        return l;
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    const before = await simCounters();
    const names = Array.from({ length: BURST }, (_, i) => `burst-${String(i).padStart(4, '0')}`);
    const t0 = Date.now();
    let created = 0;
    let killed: Promise<string> | undefined;
    let killedAt = 0;
    let createdAtKill = 0;
    const queue = [...names];
    const worker = async (): Promise<void> => {
      for (let name = queue.shift(); name !== undefined; name = queue.shift()) {
        await createClaim(name);
        created++;
        if (created === Math.floor(BURST / 3) && !killed) {
          killedAt = Date.now();
          createdAtKill = created;
          // local: SIGKILL of the process (it cannot hand the Lease over). installed: the leader's
          // pod deleted with grace period 0: the kubelet still sends SIGTERM and kills 2 s later,
          // but the pod's token stops being accepted as the object goes, so its hand-over races that
          killed = sys.killLeader('claimController');
        }
      }
    };
    // the parts of a failover: the Lease taken by another replica (its acquireTime, so nothing
    // polls it meanwhile), that leader's first Bound, its last. Bound claims are counted from the
    // start, creates included: a replica that hands the Lease over on its way out is replaced
    // within a second or two, while the burst is still being created
    const progress: { at: number; bound: number }[] = [];
    const bound = waitBound(names, 300_000, (n) => progress.push({ at: Date.now(), bound: n }), 500);
    await Promise.all(Array.from({ length: 16 }, () => worker()));
    const createdS = (Date.now() - t0) / 1000;
    const killedLeader = await killed;
    const claims = await bound;
    const lastBoundAt = Date.now();
    const healS = (lastBoundAt - killedAt) / 1000;
    const newLeaderAt = (await sys.leaderSince('claimController'))?.getTime() ?? 0;
    const boundAtTakeover = progress.filter((p) => p.at <= newLeaderAt).at(-1)?.bound ?? 0;
    const firstBoundAt = progress.find((p) => p.at > newLeaderAt && p.bound > boundAtTakeover)?.at ?? lastBoundAt;
    const newLeader = await sys.leaderOf('claimController');

    const ids = claims.map((c) => c.status?.sandbox?.claimID ?? '');
    expect(ids.every((id) => id !== '')).toBe(true);
    const refs = new Map<string, number>();
    for (const n of sys.nodes) {
      for (const row of await simRows(n))
        if (servedNameOf(row.claim_ref)?.startsWith(`${ns}/burst-`) && row.claim_ref)
          refs.set(row.claim_ref, (refs.get(row.claim_ref) ?? 0) + 1);
    }
    const doubles = [...refs.values()].filter((v) => v > 1).length + (ids.length - new Set(ids).size);
    const after = await simCounters();
    const exited = await sys.appsThatExited();
    figures({
      fault: 'kill-claim-controller-leader',
      target: sys.target,
      claims: BURST,
      bound: claims.filter(isBound).length,
      released: after.releases - before.releases,
      node_claims: after.claims - before.claims,
      double_deliveries: doubles,
      create_s: createdS,
      killed_after_claims: createdAtKill,
      killed_after_s: (killedAt - t0) / 1000,
      heal_s: healS,
      deletion_to_new_leader_s: (newLeaderAt - killedAt) / 1000,
      new_leader_to_first_bound_s: (firstBoundAt - newLeaderAt) / 1000,
      first_to_last_bound_s: (lastBoundAt - firstBoundAt) / 1000,
      total_s: (Date.now() - t0) / 1000,
      killed_leader: killedLeader,
      leader_after: newLeader,
      apps_exited: exited.length,
    });
    expect(claims.filter(isBound)).toHaveLength(BURST);
    // killed mid-burst: after a third of the creates, while the rest were still to come
    expect(createdAtKill).toBe(Math.floor(BURST / 3));
    expect(killedLeader).toBe(leader);
    expect(new Set(ids).size).toBe(BURST);
    expect(refs.size).toBe(BURST);
    expect(doubles).toBe(0);
    expect(newLeader).toBeDefined();
    // the parts printed are ordered: deletion, a new holder, its first Bound, its last
    expect(newLeaderAt).toBeGreaterThan(killedAt);
    expect(firstBoundAt).toBeGreaterThanOrEqual(newLeaderAt);
    expect(lastBoundAt).toBeGreaterThanOrEqual(firstBoundAt);
    expect(healS).toBe((lastBoundAt - killedAt) / 1000);
    expect(after.releases - before.releases).toBe(0);
    expect(after.claims - before.claims).toBe(BURST);
    expect(exited).toEqual([]);
  }, 420_000);

  itWithNodes(2)(
    'keeps listing, routes claims around and sends no DELETED for the sandboxes of a partitioned node',
    async () => {
      const part = sys.nodes[sys.nodes.length - 1] as SandboxdNode;
      const onPart = (await simRows(part))
        .map((r) => servedNameOf(r.claim_ref) ?? '')
        .filter((r) => r.startsWith(`${ns}/`))
        .map((r) => r.slice(ns.length + 1));
      expect(onPart.length).toBeGreaterThan(0);
      const watch = kubectlStream(['get', 'sandboxes', '-n', ns, '-w', '--output-watch-events', '-o', 'json']);
      try {
        await eventually(
          () => {
            const seen = new Set(watchEvents(watch.out()).map((e) => (e.object as { metadata?: { name?: string } }).metadata?.name));
            const missing = onPart.filter((n) => !seen.has(n));
            if (missing.length > 0)
              throw new Error(
                `the watch has not listed ${missing.length}/${onPart.length} of the partitioned node's sandboxes yet (e.g. ${missing.slice(0, 3).join(', ')}); kubectl ${watch.proc.exitCode === null ? 'running' : `exited ${watch.proc.exitCode}`}, ${watch.out().length} bytes out, stderr: ${watch.err().slice(-500)}`,
              );
          },
          { timeoutMs: 120_000, intervalMs: 2000 },
        );
        const t0 = Date.now();
        await setFaults(part, { partition: 'hang' });
        let lists = 0;
        let listedOnPart = 0;
        for (let i = 0; i < 3; i++) {
          const r = await k(['get', 'sandboxes', '-A', '-o', 'name']);
          lists++;
          listedOnPart = onPart.filter((n) => r.stdout.includes(`/${n}\n`)).length;
        }
        const names = Array.from({ length: 12 }, (_, i) => `part-${i}`);
        await Promise.all(names.map((n) => createClaim(n)));
        const bound = await waitBound(names, 120_000);
        const bindS = (Date.now() - t0) / 1000;
        const nodesUsed = bound.map((c) => c.status?.sandbox?.nodeName);
        await eventually(
          () => {
            const seen = new Set(watchEvents(watch.out()).map((e) => (e.object as { metadata?: { name?: string } }).metadata?.name));
            if (!names.every((n) => seen.has(n))) throw new Error("the watch has not shown the new claims' sandboxes yet");
          },
          { timeoutMs: 60_000, intervalMs: 500 },
        );
        const events = watchEvents(watch.out());
        const deleted = events.filter(
          (e) => e.type === 'DELETED' && onPart.includes((e.object as { metadata: { name: string } }).metadata.name),
        ).length;
        figures({
          fault: 'partition-node',
          node: part.name,
          sandboxes_on_node: onPart.length,
          lists_ok: lists,
          listed_from_partitioned: listedOnPart,
          new_claims: names.length,
          bound: bound.length,
          bound_on_partitioned: nodesUsed.filter((n) => n === part.name).length,
          bind_s: bindS,
          watch_events: events.length,
          deleted_events_for_partitioned: deleted,
          observed_s: (Date.now() - t0) / 1000,
        });
        expect(lists).toBe(3);
        // every sandbox of the partitioned node stayed listed, from its last inventory
        expect(listedOnPart).toBe(onPart.length);
        expect(bound).toHaveLength(names.length);
        expect(nodesUsed.filter((n) => n === part.name)).toEqual([]);
        expect(events.length).toBeGreaterThanOrEqual(onPart.length + names.length);
        expect(deleted).toBe(0);
        expect(watch.proc.exitCode).toBeNull();
      } finally {
        await clearFaults(part);
        await watch.stop();
      }
      expect(await sys.appsThatExited()).toEqual([]);
    },
    300_000,
  );

  it('rebuilds a deleted NodeInventory from its publisher', async () => {
    const node = sys.nodes[0] as SandboxdNode;
    // the inventory first catches up with the node (the previous test's last claims may be one
    // publish away), so the rebuilt one is compared with what the node really holds
    const before = await eventually(
      async () => {
        const inv = parseObject(NodeInventorySchema, JSON.parse((await k(['get', 'nodeinventory', node.name, '-o', 'json'])).stdout));
        const held = (await simRows(node)).length;
        if ((inv.entries?.length ?? 0) !== held)
          throw new Error(`inventory lists ${inv.entries?.length ?? 0} of the node's ${held} sandboxes`);
        return inv;
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    const t0 = Date.now();
    await k(['delete', 'nodeinventory', node.name]);
    const after = await eventually(
      async () => {
        const r = await kubectl(['get', 'nodeinventory', node.name, '-o', 'json'], { kubeconfig: sys.kubeconfigPath });
        if (r.code !== 0) throw new Error(r.stderr);
        const inv = parseObject(NodeInventorySchema, JSON.parse(r.stdout));
        if (inv.metadata.uid === before.metadata.uid) throw new Error('not deleted yet');
        return inv;
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    figures({
      fault: 'delete-nodeinventory',
      node: node.name,
      entries_before: before.entries?.length ?? 0,
      entries_after: after.entries?.length ?? 0,
      rebuild_s: (Date.now() - t0) / 1000,
    });
    expect(after.entries?.length ?? 0).toBe(before.entries?.length ?? 0);
  }, 120_000);

  it('resumes a sandbox watch across a sandbox-apiserver restart without losing an event', async () => {
    const path = `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes`;
    const list = JSON.parse((await k(['get', '--raw', path])).stdout) as { metadata: { resourceVersion: string } };
    let lastRv = list.metadata.resourceVersion;
    const seen: { type: string; name: string }[] = [];
    let reopened = 0;
    let expired = 0;
    let stopped = false;
    let current: { abort: () => void } | undefined;
    const w = new Watch(sys.kubeConfig);
    const open = async (): Promise<void> => {
      while (!stopped) {
        let gone = false;
        try {
          const closed = new Promise<void>((resolve) => {
            void w
              .watch(
                path,
                { resourceVersion: lastRv, allowWatchBookmarks: true },
                (type: string, obj: { code?: number; metadata?: { name?: string; resourceVersion?: string } }) => {
                  if (type === 'ERROR') {
                    gone = obj.code === 410;
                    return;
                  }
                  if (obj.metadata?.resourceVersion) lastRv = obj.metadata.resourceVersion;
                  if (type !== 'BOOKMARK') seen.push({ type, name: obj.metadata?.name ?? '' });
                },
                () => resolve(),
              )
              .then(
                (c) => (current = c),
                () => resolve(),
              );
          });
          await closed;
        } catch {
          /* reopened below */
        }
        if (stopped) return;
        if (gone) {
          expired++;
          const relist = await kubectl(['get', '--raw', path], { kubeconfig: sys.kubeconfigPath });
          if (relist.code === 0) {
            const l = JSON.parse(relist.stdout) as { metadata: { resourceVersion: string }; items: { metadata: { name: string } }[] };
            for (const it of l.items) seen.push({ type: 'RELIST', name: it.metadata.name });
            lastRv = l.metadata.resourceVersion;
          }
        }
        reopened++;
        // reopened once the path answers again, rather than after a fixed back-off: a watch closed
        // by a replica going away would otherwise fail at once and again until it is back
        await eventually(
          async () => {
            if (stopped) return;
            const r = await kubectl(['get', '--raw', `${path}?limit=1`], { kubeconfig: sys.kubeconfigPath });
            if (r.code !== 0) throw new Error(r.stderr);
          },
          { timeoutMs: 60_000, intervalMs: 250 },
        ).catch(() => undefined);
      }
    };
    const running = open();
    const t0 = Date.now();
    let downAt = 0;
    // installed: every replica in turn, so the one serving the watch is among them
    const replicas = sys.apiserverUrls.length;
    for (let i = 0; i < replicas; i++) {
      await sys.restartApiserverReplica(
        i > 0
          ? {}
          : {
              whileDown: async () => {
                downAt = Date.now();
                await createClaim('during-restart');
                await waitBound(['during-restart'], 60_000);
              },
            },
      );
    }
    await eventually(
      async () => {
        const r = await kubectl(['get', 'sandboxes', '-n', ns, 'during-restart', '-o', 'name'], { kubeconfig: sys.kubeconfigPath });
        if (r.code !== 0) throw new Error(r.stderr);
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    const upAt = Date.now();
    // the client is through its relist (or its resumed watch) before the next sandbox appears: a
    // Ready claim's Sandbox is served at once, and one made during the relist is in the relist
    await eventually(
      () => {
        if (!seen.some((e) => e.name === 'during-restart')) throw new Error('the watch has not caught up with the restart yet');
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    // With two replicas that condition can hold before the last restart (the first one's relist
    // carried it) while the watch is still reopening after the last: it is current once it has
    // seen a sandbox made after every restart, and from then on what comes is its own event
    await createClaim('after-restarts-marker');
    await waitBound(['after-restarts-marker'], 60_000);
    await eventually(
      () => {
        if (!seen.some((e) => e.name === 'after-restarts-marker')) throw new Error('the watch has not caught up with the last restart yet');
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    await createClaim('after-restart');
    await waitBound(['after-restart'], 60_000);
    await eventually(
      () => {
        for (const n of ['during-restart', 'after-restart'])
          if (!seen.some((e) => e.name === n && (e.type === 'ADDED' || e.type === 'RELIST')))
            throw new Error(`the watch has not seen ${n}`);
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    stopped = true;
    current?.abort();
    await running;
    const duringEvent = seen.find((e) => e.name === 'during-restart')?.type;
    const afterEvent = seen.find((e) => e.name === 'after-restart')?.type;
    const exited = await sys.appsThatExited();
    figures({
      fault: 'restart-sandbox-apiserver',
      target: sys.target,
      replicas_restarted: replicas,
      watch_reopened: reopened,
      expired_410: expired,
      down_s: (upAt - downAt) / 1000,
      during_restart_event: duringEvent,
      after_restart_event: afterEvent,
      total_s: (Date.now() - t0) / 1000,
      apps_exited: exited.length,
    });
    expect(replicas).toBe(sys.target === 'installed' ? 2 : 1);
    expect(reopened).toBeGreaterThan(0);
    // each 410 is followed by a relist and a new watch
    expect(expired).toBeLessThanOrEqual(reopened);
    // A lone restarted server cannot know what was deleted before it started: the watch resumed
    // from the old resourceVersion is told to relist (410), and the relist carries the sandbox
    // created while it was down. With two replicas the other one may resume it instead.
    if (sys.target === 'local') expect(expired).toBeGreaterThan(0);
    expect(['ADDED', 'RELIST']).toContain(duringEvent);
    expect(afterEvent).toBe('ADDED');
    expect(exited).toEqual([]);
  }, 240_000);

  itWithNodes(2)(
    'binds claims around a node answering 5xx, slowly, 503 Retry-After or malformed JSON, and reports the failures',
    async () => {
      const bad = sys.nodes[1] as SandboxdNode;
      // `handsOver`: the node claims the VM whatever the caller sees (a slow reply, an unusable one,
      // one after the caller's 10 s bound); a claim may then be bound there, and no VM may be left
      // that no claim records. The others fail without a side effect and bind nothing there.
      const modes: [string, Record<string, unknown>, boolean][] = [
        ['error-5xx', { errorRate: { claim: 1 } }, false],
        ['latency-3s', { latencyMs: 3000 }, true],
        ['unavailable-503', { unavailable: { claim: 1 } }, false],
        ['malformed-invalid-json', { malformed: { claim: 'invalid-json' } }, true],
        ['malformed-wrong-shape', { malformed: { claim: 'wrong-shape' } }, true],
        ['malformed-oversized', { malformed: { claim: 'oversized' } }, true],
        ['claim-outlives-timeout', { slow: { claim: 12_000 } }, true],
      ];
      for (const [mode, faults, handsOver] of modes) {
        const c0 = await simCounters([bad]);
        await setFaults(bad, faults);
        const t0 = Date.now();
        const names = Array.from({ length: 6 }, (_, i) => `f-${mode}-${i}`);
        try {
          await Promise.all(names.map((n) => createClaim(n)));
          const bound = await waitBound(names, 120_000);
          // a node that hands VMs over may still be serving a claim its caller gave up on: every
          // claim it received is answered before its deliveries are counted
          const c1 = handsOver
            ? await eventually(
                async () => {
                  const c = await simCounters([bad]);
                  if (c.claimRequests - c0.claimRequests !== c.claims - c0.claims) throw new Error(`${bad.name} is still serving a claim`);
                  return c;
                },
                { timeoutMs: 60_000, intervalMs: 500 },
              )
            : await simCounters([bad]);
          const unrecorded = async (): Promise<number> =>
            (await simRows(bad)).filter(
              (r) =>
                names.some((n) => servedNameOf(r.claim_ref) === `${ns}/${n}`) && !bound.some((c) => c.status?.sandbox?.claimID === r.id),
            ).length;
          const leakedAtBind = await unrecorded();
          // a VM the node handed over after the claim was bound elsewhere is released by the orphan pass (every 5 s)
          const leaked = await eventually(
            async () => {
              const n = await unrecorded();
              if (n > 0) throw new Error(`${n} deliveries on ${bad.name} recorded by no claim`);
              return n;
            },
            { timeoutMs: 60_000, intervalMs: 1000 },
          ).catch(() => unrecorded());
          const warnings = JSON.parse((await k(['get', 'events', '-n', ns, '-o', 'json'])).stdout) as {
            items: { type: string; reason: string; involvedObject: { name: string }; message?: string; note?: string }[];
          };
          const failed = warnings.items.filter((e) => e.type === 'Warning' && names.includes(e.involvedObject.name));
          const boundOnFaulty = bound.filter((c) => c.status?.sandbox?.nodeName === bad.name).length;
          const handedOver = c1.claims - c0.claims;
          const releasedOnFaulty = (await simCounters([bad])).releases - c0.releases;
          const exited = await sys.appsThatExited();
          figures({
            fault: 'sandboxd-faults',
            mode,
            node: bad.name,
            claims: names.length,
            bound: bound.filter(isBound).length,
            bound_on_faulty: boundOnFaulty,
            unrecorded_deliveries_on_faulty_at_bind: leakedAtBind,
            unrecorded_deliveries_on_faulty: leaked,
            claim_requests_on_faulty: c1.claimRequests - c0.claimRequests,
            handed_over_on_faulty: handedOver,
            released_on_faulty: releasedOnFaulty,
            warning_events: failed.length,
            warning_reasons: [...new Set(failed.map((e) => e.reason))],
            bind_s: (Date.now() - t0) / 1000,
            apps_exited: exited.length,
          });
          expect(bound.filter(isBound)).toHaveLength(names.length);
          // a node that fails every claim binds none; one that hands VMs over may bind (its VM adopted)
          if (!handsOver) expect(boundOnFaulty).toBe(0);
          expect(leakedAtBind).toBeGreaterThanOrEqual(leaked);
          expect(leaked).toBe(0);
          // every VM the node handed over is held by its claim, or was a second one and released
          expect(handedOver).toBeLessThanOrEqual(c1.claimRequests - c0.claimRequests);
          expect(releasedOnFaulty).toBe(handedOver - boundOnFaulty);
          // a Warning on these claims says a claim on the node failed (a 503 is retried, a slow reply
          // awaited: those need none), at most once per claim
          expect(failed.filter((e) => e.reason !== 'ClaimFailed')).toEqual([]);
          expect(failed.length).toBeLessThanOrEqual(names.length);
          expect(exited).toEqual([]);
        } finally {
          await clearFaults(bad);
        }
      }
    },
    600_000,
  );

  it('answers every malformed or hostile body with a 4xx and writes nothing', async () => {
    const server = sys.kubeConfig.getCurrentCluster()?.server ?? '';
    const sbPath = `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes`;
    const targets = [
      { name: 'aggregated', url: `${server}${sbPath}`, auth: { kc: sys.kubeConfig }, kind: 'sandbox' as const },
      { name: 'direct', url: `${sys.apiserverUrl}${sbPath}`, auth: { token: clientToken }, kind: 'sandbox' as const },
      { name: 'fast-path', url: `${sys.fastPathUrl}/v1/claims`, auth: { token: fastPathToken }, kind: 'claim' as const },
    ];
    const container = { name: 'agent', image: IMAGE, resources: { requests: { cpu: '1', memory: '1Gi' } } };
    const sandbox = (name: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
      apiVersion: 'agents.x-k8s.io/v1beta1',
      kind: 'Sandbox',
      metadata: { name },
      spec: { podTemplate: { spec: { containers: [container] } } },
      ...extra,
    });
    const deep = (n: number): string => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;
    const big = 'x'.repeat(1_100_000);
    const badNames = ['Bad_Name', '-x', 'a..b', 'x'.repeat(254), '../etc', 'ünïcode', '', ' ', 'a/b', '\u0000'];
    const sandboxBodies: ((i: number) => string | Buffer)[] = [
      (i) => JSON.stringify(sandbox(`trunc-${i}`)).slice(0, 10 + (i % 150)),
      () => JSON.stringify({ ...sandbox('wrong-types'), spec: 'x' }),
      () => JSON.stringify({ ...sandbox('wrong-types'), metadata: 42 }),
      () => JSON.stringify(sandbox('wrong-pod', { spec: { podTemplate: { spec: { containers: 'none' } } } })),
      () => JSON.stringify(sandbox('wrong-image', { spec: { podTemplate: { spec: { containers: [{ name: 'a', image: 42 }] } } } })),
      () => JSON.stringify(sandbox('no-containers', { spec: { podTemplate: { spec: { containers: [] } } } })),
      () =>
        JSON.stringify(
          sandbox('past', { spec: { podTemplate: { spec: { containers: [container] } }, shutdownTime: '2000-01-01T00:00:00Z' } }),
        ),
      () => JSON.stringify(sandbox('bad-mode', { spec: { podTemplate: { spec: { containers: [container] } }, operatingMode: 'Bogus' } })),
      () => JSON.stringify(sandbox('y'.repeat(300_000))),
      (i) => JSON.stringify(sandbox(badNames[i % badNames.length])),
      (i) =>
        JSON.stringify({ ...sandbox(badNames[i % badNames.length]), unknownField: { nested: [1, 2, 3] }, status: { nodeName: 'evil' } }),
      () => '{"__proto__":{"kind":"Sandbox","apiVersion":"agents.x-k8s.io/v1beta1"},"metadata":{"name":"proto"},"spec":{}}',
      () =>
        `{"apiVersion":"agents.x-k8s.io/v1beta1","kind":"Sandbox","metadata":{"name":"Proto_Bad","__proto__":{"namespace":"kube-system"}},"constructor":{"prototype":{"polluted":true}},"spec":{"podTemplate":{"spec":{"containers":[${JSON.stringify(container)}]}}}}`,
      () => JSON.stringify({ ...sandbox('other-ns'), metadata: { name: 'other-ns', namespace: 'kube-system' } }),
      () => JSON.stringify({ ...sandbox('wrong-kind'), kind: 'Pod' }),
      () => JSON.stringify({ ...sandbox('wrong-version'), apiVersion: 'agents.x-k8s.io/v1' }),
      () => deep(5_000),
      () => `${'['.repeat(100_000)}${']'.repeat(100_000)}`,
      // 1.1 MiB with a bad name; over the 3 MiB request limit (kube-apiserver's too) with a good one
      () => JSON.stringify({ ...sandbox('Huge_Body'), pad: big }),
      () => JSON.stringify({ ...sandbox('huge-body'), pad: 'x'.repeat(3 * 1024 * 1024 + 1024) }),
      () => 'null',
      () => '[]',
      () => '42',
      () => '"a string"',
      () => '',
      () => Buffer.from([0xff, 0xfe, 0x00, 0x01, 0x7b, 0x22]),
      () => '{"kind":"Sandbox","kind":"Sandbox","apiVersion":"agents.x-k8s.io/v1beta1","metadata":{"name":"Dup_Keys"}}',
    ];
    const claimBodies: ((i: number) => string | Buffer)[] = [
      (i) => JSON.stringify({ namespace: ns, warmPool: POOL }).slice(0, 5 + (i % 30)),
      () => JSON.stringify({ namespace: 42, warmPool: POOL }),
      () => JSON.stringify({ namespace: ns, warmPool: [POOL] }),
      () => JSON.stringify({ namespace: ns, warmPool: POOL, ttlSeconds: 'forever' }),
      () => JSON.stringify({ namespace: ns, warmPool: POOL, ttlSeconds: -1 }),
      () => JSON.stringify({ namespace: ns, warmPool: POOL, ttlSeconds: 1e12 }),
      () => JSON.stringify({ namespace: ns, warmPool: 'p'.repeat(300_000) }),
      (i) => JSON.stringify({ namespace: ns, name: badNames[i % badNames.length], warmPool: POOL }),
      (i) => JSON.stringify({ namespace: badNames[i % badNames.length], warmPool: POOL }),
      () => JSON.stringify({ namespace: ns, warmPool: POOL, unknown: true }),
      () => `{"namespace":"${ns}","warmPool":"${POOL}","__proto__":{"ttlSeconds":5}}`,
      () => `{"namespace":"${ns}","warmPool":"${POOL}","constructor":{"prototype":{"polluted":true}}}`,
      () => JSON.stringify({ namespace: ns, warmPool: 'no-such-pool' }),
      () => JSON.stringify({ namespace: 'kube-system', warmPool: POOL }),
      () => deep(5_000),
      () => `${'['.repeat(100_000)}${']'.repeat(100_000)}`,
      () => JSON.stringify({ namespace: ns, warmPool: POOL, pad: big }),
      () => 'null',
      () => '[]',
      () => '',
      () => Buffer.from([0xff, 0xfe, 0x00, 0x01, 0x7b, 0x22]),
    ];
    // bodies that do not depend on the request index are built once: rebuilding megabyte strings
    // per request would measure the test, not the servers
    const memo = (fs: ((i: number) => string | Buffer)[]): ((i: number) => string | Buffer)[] =>
      fs.map((f) =>
        f.length === 0
          ? (
              (v) => () =>
                v
            )(f(0))
          : f,
      );
    sandboxBodies.splice(0, sandboxBodies.length, ...memo(sandboxBodies));
    claimBodies.splice(0, claimBodies.length, ...memo(claimBodies));
    // What a hostile request could have written: a claim (any namespace) or a sandbox named in a
    // hostile body, a fast-path claim under a generated `<warmPool>-<hex>` name, a node claim.
    // Other sandboxes come and go meanwhile (earlier claims reach their node lease), so totals would not do.
    const hostileNames = new Set<string>();
    for (const f of [...sandboxBodies, ...claimBodies]) {
      for (let i = 0; i < 200; i++) {
        const body = f(i);
        if (typeof body !== 'string') continue;
        for (const m of body.matchAll(/"name":"([^"]*)"/g)) hostileNames.add(m[1] as string);
        if (f.length === 0) break;
      }
    }
    const generated = new RegExp(`^(${POOL}|no-such-pool)-[0-9a-f]{6}$`);
    const hostileNamed = (name: string): boolean => hostileNames.has(name) || /^trunc-\d+$/.test(name) || generated.test(name);
    const hostileWrites = async (): Promise<{ claims: string[]; sandboxes: string[]; nodeClaims: number }> => {
      const claims = (
        (await custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: 'sandboxclaims' })) as { items: Claim[] }
      ).items;
      const sandboxes = (await k(['get', 'sandboxes', '-n', ns, '-o', 'name'])).stdout
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((n) => n.replace(/^[^/]*\//, ''));
      return {
        claims: claims.filter((c) => hostileNamed(c.metadata.name)).map((c) => `${c.metadata.namespace ?? ''}/${c.metadata.name}`),
        sandboxes: sandboxes.filter(hostileNamed),
        nodeClaims: (await simCounters()).claims,
      };
    };
    const before = await hostileWrites();
    const statuses = new Map<string, number>();
    const offending: { target: string; body: number; status: number; text: string }[] = [];
    let sent = 0;
    let resets = 0;
    const resetSizes: number[] = [];
    const resetHow = new Map<string, number>();
    const t0 = Date.now();
    const worker = async (w: number): Promise<void> => {
      for (let i = w; Date.now() - t0 < HOSTILE_SECONDS * 1000 && sent < 10_000; i += 16) {
        const target = targets[i % targets.length] as (typeof targets)[number];
        const bodies = target.kind === 'claim' ? claimBodies : sandboxBodies;
        const bi = Math.floor(i / targets.length) % bodies.length;
        const body = (bodies[bi] as (i: number) => string | Buffer)(i);
        sent++;
        try {
          const r = await httpsRequest(target.url, 'POST', body, target.auth);
          statuses.set(`${target.name}:${r.status}`, (statuses.get(`${target.name}:${r.status}`) ?? 0) + 1);
          if (r.status < 400 || r.status >= 500)
            offending.push({ target: target.name, body: bi, status: r.status, text: r.text.slice(0, 300) });
        } catch (err) {
          resets++; // the server answered 413 and closed before the whole body was sent
          resetSizes.push(body.length);
          const how = `${target.name}:${(err as NodeJS.ErrnoException).code ?? 'error'}`;
          resetHow.set(how, (resetHow.get(how) ?? 0) + 1);
        }
      }
    };
    await Promise.all(Array.from({ length: 16 }, (_, w) => worker(w)));
    const elapsed = (Date.now() - t0) / 1000;
    const after = await hostileWrites();
    const newClaims = after.claims.filter((c) => !before.claims.includes(c));
    const newSandboxes = after.sandboxes.filter((n) => !before.sandboxes.includes(n));
    const answered4xx = [...statuses].filter(([s]) => /:4\d\d$/.test(s)).reduce((n, [, v]) => n + v, 0);
    const answered = [...statuses.values()].reduce((n, v) => n + v, 0);
    const exited = await sys.appsThatExited();
    figures({
      fault: 'hostile-bodies',
      requests: sent,
      seconds: elapsed,
      answered_4xx: answered4xx,
      answered_5xx: offending.filter((o) => o.status >= 500).length,
      answered_2xx_3xx: offending.filter((o) => o.status < 400).length,
      connection_resets: resets,
      smallest_reset_body: resetSizes.length ? Math.min(...resetSizes) : null,
      resets_by_target: Object.fromEntries(resetHow),
      statuses: Object.fromEntries(statuses),
      new_claims: newClaims.length,
      new_sandboxes: newSandboxes.length,
      node_claims: after.nodeClaims - before.nodeClaims,
      apps_exited: exited.length,
    });
    if (offending.length > 0) console.log(JSON.stringify(offending.slice(0, 10)));
    expect(offending).toEqual([]);
    expect(sent).toBeGreaterThanOrEqual(1000);
    // every request was answered 4xx, or closed by a server refusing an oversized body (over 1 MiB) early
    expect(answered4xx + resets).toBe(sent);
    expect([...resetHow.values()].reduce((n, v) => n + v, 0)).toBe(resets);
    expect(answered).toBe(answered4xx);
    expect(resetSizes.filter((n) => n <= 1024 * 1024)).toEqual([]);
    expect(newClaims).toEqual([]);
    expect(newSandboxes).toEqual([]);
    expect(after.nodeClaims).toBe(before.nodeClaims);
    expect(exited).toEqual([]);
  }, 300_000);

  it('keeps sandbox tokens out of every list, get, watch, event and log line', async () => {
    const created = JSON.parse(
      (await k(['create', '-f', '-', '-o', 'json'], JSON.stringify(sandboxManifest('direct-1', IMAGE, ns)))).stdout,
    ) as { metadata: { annotations?: Record<string, string> } };
    const tokens = new Set<string>();
    // the create response is the one place a Sandbox's token is shown
    for (const [key, v] of Object.entries(created.metadata.annotations ?? {})) if (/token/i.test(key)) tokens.add(v);
    const createTokens = tokens.size;
    const secrets = await sys.kubeConfig.makeApiClient(CoreV1Api).listNamespacedSecret({ namespace: ns });
    for (const s of secrets.items) {
      if (s.type === 'kubernetes.io/service-account-token') continue;
      for (const [key, v] of Object.entries(s.data ?? {})) if (/token/i.test(key)) tokens.add(Buffer.from(v, 'base64').toString('utf8'));
    }
    const secretTokens = tokens.size - createTokens;
    for (const n of sys.nodes) {
      for (const row of await simRows(n)) {
        if (!servedNameOf(row.claim_ref)?.startsWith(`${ns}/`) && !row.claim_ref?.includes('direct-1')) continue;
        const detail = (await (await sim(n, `/v1/sandboxes/${encodeURIComponent(row.id)}`)).json()) as { token?: string };
        if (detail.token) tokens.add(detail.token);
      }
    }
    const all = [...tokens].filter((t) => t.length >= 8);
    expect(createTokens).toBe(1);
    expect(secretTokens).toBeGreaterThan(0);
    const watch = kubectlStream(['get', 'sandboxes', '-A', '-w', '-o', 'json']);
    await eventually(
      () => {
        if (!watch.out().includes('"direct-1"')) throw new Error('watch has not listed direct-1');
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    await watch.stop();
    const outputs: [string, string][] = [
      ['get sandboxes -A -o json', (await k(['get', 'sandboxes', '-A', '-o', 'json'])).stdout],
      ['get sandboxes -A -o yaml', (await k(['get', 'sandboxes', '-A', '-o', 'yaml'])).stdout],
      ['get sandbox direct-1 -o yaml', (await k(['get', 'sandbox', '-n', ns, 'direct-1', '-o', 'yaml'])).stdout],
      ['get sandboxes -o wide', (await k(['get', 'sandboxes', '-A', '-o', 'wide'])).stdout],
      ['get sandboxes -w -o json', watch.out()],
      ['get sandboxclaims -A -o json', (await k(['get', 'sandboxclaims', '-A', '-o', 'json'])).stdout],
      ['get nodeinventories -o json', (await k(['get', 'nodeinventories', '-o', 'json'])).stdout],
      ['get events -A -o json', (await k(['get', 'events', '-A', '-o', 'json'])).stdout],
    ];
    const logs = await sys.appLogs();
    for (const [app, text] of logs) outputs.push([`log ${app}`, text]);
    const leaks = outputs.flatMap(([where, text]) => all.filter((t) => text.includes(t)).map(() => where));
    const bytes = outputs.reduce((n, [, t]) => n + t.length, 0);
    figures({
      fault: 'token-exposure',
      tokens: all.length,
      from_claim_secrets: secretTokens,
      outputs_scanned: outputs.length,
      logs_scanned: logs.size,
      bytes_scanned: bytes,
      leaks: leaks.length,
      leaked_in: [...new Set(leaks)],
    });
    // the create's token, the claim Secrets' and the node's own for each sandbox of the namespace
    expect(all.length).toBeGreaterThan(secretTokens);
    // every app's log was read (local: each process; installed: each pod), beside the 8 outputs
    expect(logs.size).toBeGreaterThanOrEqual(5);
    expect(outputs.length).toBe(8 + logs.size);
    expect(bytes).toBeGreaterThan(0);
    expect(leaks).toHaveLength(0);
    if (leaks.length > 0) {
      // where each leak is, with the token masked
      const lines = outputs.flatMap(([where, text]) =>
        text
          .split('\n')
          .filter((l) => all.some((t) => l.includes(t)))
          .slice(0, 2)
          .map((l) => `${where}: ${all.reduce((x, t) => x.split(t).join('<TOKEN>'), l).slice(0, 600)}`),
      );
      console.log(lines.join('\n'));
    }
    expect([...new Set(leaks)]).toEqual([]);
  }, 180_000);
});
