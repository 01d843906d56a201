import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { AddressInfo } from 'node:net';
import { ClaimBodySchema, SandboxdClientSet, nodeToken, normalizeBaseUrl, type ClaimBody } from '@sandbox-scale/sandboxd-client';
import { createLogger, type Logger } from '@sandbox-scale/kube-runtime';
import { claim, type ClaimOutcome } from './claim-ops';
import { systemClock, type Clock } from './clock';
import { NodeConfigSchema, SimOptionsSchema, type NodeConfigInput, type SimOptions, type SimOptionsInput } from './config';
import { FaultState, type Faults, type FaultsInput } from './faults';
import { GossipBoard, Mesh, httpPeer, localLink, type LocalPeer, type PeerLink } from './gossip';
import { LatencyModel } from './latency';
import { NodeState } from './node-state';
import { configPools, setPools } from './pools-ops';
import { sweep } from './reaper';
import { createRng, nodeSeed } from './rng';
import { DataPlane } from './data-plane/data-plane';
import { destroyUpgrades } from './data-plane/upgrade';
import { createNodeServer } from './server';
import { KeyTable } from './wire-key';

export interface StartSimOptions extends SimOptionsInput {
  /** Virtual time for tests (ManualClock); default the system clock. */
  clock?: Clock;
  logger?: Logger;
  /** Per-node overrides of the node configuration (e.g. one node with egress). */
  perNode?: (index: number) => Partial<NodeConfigInput>;
}

/** How to reach one simulated node. `token` is its root token ('' on an open node). */
export interface SimNodeInfo {
  name: string;
  url: string;
  port: number;
  /** `host:port`, the node's advertise_addr (what owner_addr and redirects carry). */
  addr: string;
  token: string;
}

/** A node plus hooks for tests: its state, faults and gossip. */
export interface SimNode extends SimNodeInfo {
  readonly state: NodeState;
  readonly faults: FaultState;
  readonly mesh: Mesh | undefined;
  readonly stopped: boolean;
  setFaults(faults: FaultsInput): Faults;
  clearFaults(): void;
  /** Refreshes the gossip view now instead of waiting for the tick. */
  refreshGossip(): Promise<void>;
  /** A frozen view keeps what it last saw (stale redirects). */
  freezeGossip(frozen: boolean): void;
  /** Runs the refill pass and the reaper sweep now. */
  tick(): void;
  /** Claims in-process as root, without HTTP (memory measurements). */
  claimLocal(body: ClaimBody): Promise<ClaimOutcome>;
}

export interface Sim {
  readonly nodes: readonly SimNodeInfo[];
  readonly clock: Clock;
  node(name: string): SimNode;
  /** Stops one node: its port closes, its claims vanish, peers stop seeing it. */
  stopNode(name: string): Promise<void>;
  stop(): Promise<void>;
}

class NodeHandle implements SimNode {
  stopped = false;
  mesh: Mesh | undefined;
  url = '';
  port = 0;
  addr = '';

  readonly name: string;
  readonly token: string;
  readonly state: NodeState;
  readonly faults: FaultState;
  readonly server: Server;
  readonly #board: GossipBoard;

  constructor(init: { name: string; token: string; state: NodeState; faults: FaultState; server: Server; board: GossipBoard }) {
    this.name = init.name;
    this.token = init.token;
    this.state = init.state;
    this.faults = init.faults;
    this.server = init.server;
    this.#board = init.board;
  }

  setFaults(faults: FaultsInput): Faults {
    return this.faults.set(faults);
  }

  clearFaults(): void {
    this.faults.clear();
  }

  async refreshGossip(): Promise<void> {
    this.#board.publish();
    await this.mesh?.refresh();
  }

  freezeGossip(frozen: boolean): void {
    if (this.mesh) this.mesh.frozen = frozen;
  }

  tick(): void {
    this.state.pools.refillAll();
    sweep(this.state);
  }

  claimLocal(body: ClaimBody): Promise<ClaimOutcome> {
    return claim(this.state, { kind: 'root' }, ClaimBodySchema.parse(body));
  }

  reachable(): boolean {
    return !this.stopped && this.faults.current.partition === 'none';
  }
}

function every(clock: Clock, ms: number, fn: () => void): () => void {
  let stopped = false;
  let handle = clock.setTimer(function tick() {
    if (stopped) return;
    fn();
    handle = clock.setTimer(tick, ms);
  }, ms);
  return () => {
    stopped = true;
    clock.clearTimer(handle);
  };
}

/** What each node takes from the sim's options; the rest (seed, latency, speed…) the sim applies itself. */
const NODE_CONFIG_KEYS = [
  'token',
  'tenants',
  'maxClaims',
  'maxForkCount',
  'refillConcurrency',
  'egress',
  'idleHibernateSeconds',
  'archiveAfterSeconds',
  'archiveDeleteAfterSeconds',
  'checkpointTtlHours',
  'defaultTtlSeconds',
  'releaseDelaySeconds',
  'pools',
  'vmCapacity',
  'images',
  'peers',
] as const satisfies readonly (keyof SimOptions & keyof NodeConfigInput)[];

function nodeConfig(opts: SimOptions, override: Partial<NodeConfigInput>) {
  return NodeConfigSchema.parse({ ...Object.fromEntries(NODE_CONFIG_KEYS.map((k) => [k, opts[k]])), ...override });
}

interface Shared {
  keys: KeyTable;
  clock: Clock;
  logger: Logger;
  board: GossipBoard;
  /** The data directory when the data plane is on. */
  dataDir: string | undefined;
  guestUids: SimOptions['guestUids'];
}

function buildNode(opts: SimOptions, index: number, shared: Shared, override: Partial<NodeConfigInput>): NodeHandle {
  const seed = nodeSeed(opts.seed, index);
  const name = `${opts.namePrefix}${index}`;
  const config = nodeConfig(opts, { ...(opts.nodeTokenKey !== '' ? { token: nodeToken(opts.nodeTokenKey, name) } : {}), ...override });
  const faults = new FaultState(shared.keys, createRng(seed ^ 0x0fa17));
  if (opts.faults) faults.set(opts.faults);
  const rng = createRng(seed);
  const latency = new LatencyModel({ profile: opts.latency, speed: opts.speed, nested: opts.profile === 'nested', rng });
  const state = new NodeState({ name, config, keys: shared.keys, clock: shared.clock, rng, latency, faults });
  if (shared.dataDir !== undefined)
    state.dataPlane = new DataPlane({
      nodeDir: join(shared.dataDir, name),
      logger: shared.logger.child({ node: name }),
      // a range per node, so no two nodes of the process hand out the same uid
      guestUids: nodeUids(shared.guestUids, index, opts.nodes),
    });
  const server = createNodeServer({ node: state, faults, logger: shared.logger });
  return new NodeHandle({ name, token: config.token, state, faults, server, board: shared.board });
}

async function listen(h: NodeHandle, host: string, port: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    h.server.once('error', reject);
    h.server.listen(port, host, () => {
      h.server.off('error', reject);
      resolve();
    });
  });
  h.port = (h.server.address() as AddressInfo).port;
  const reachableHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  h.addr = `${reachableHost}:${h.port}`;
  h.url = `http://${h.addr}`;
  h.state.advertiseAddr = h.addr;
}

function wireMesh(handles: NodeHandle[], opts: SimOptions, clients: SandboxdClientSet, board: GossipBoard): void {
  const local: LocalPeer[] = handles.map((h) => ({ addr: h.addr, state: h.state, reachable: () => h.reachable() }));
  const byUrl = new Map(handles.map((h, i) => [h.url, local[i] as LocalPeer]));
  for (const h of handles) {
    const links: PeerLink[] = [];
    for (const peer of h.state.config.peers) {
      const url = normalizeBaseUrl(peer);
      const inProcess = byUrl.get(url);
      if (url === h.url || (inProcess && opts.mesh)) continue;
      links.push(inProcess ? localLink(inProcess, board) : httpPeer(url.replace(/^https?:\/\//, ''), clients.forNode(url), h.state.keys));
    }
    const meshed = opts.mesh && handles.length > 1;
    if (!meshed && links.length === 0) continue;
    h.mesh = new Mesh({ self: h.addr, ...(meshed ? { board } : {}), localPeers: local, links, rng: h.state.rng });
    h.state.mesh = h.mesh;
  }
}

async function closeServer(server: Server): Promise<void> {
  destroyUpgrades(server);
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** Node `index`'s share of the guest uids: an equal slice of the range. */
function nodeUids(range: SimOptions['guestUids'], index: number, nodes: number): SimOptions['guestUids'] {
  if (range === undefined) return undefined;
  const count = Math.floor(range.count / nodes);
  if (count < 1) throw new Error(`--guest-uids holds ${range.count} uids, fewer than the ${nodes} nodes`);
  return { first: range.first + index * count, count };
}

/**
 * The data directory: the one given (created if missing; each node clears its own subdirectory),
 * or a fresh one under the OS temp dir, removed again on close. With guest uids, guests may pass
 * through it to their own root and nothing more.
 */
async function openDataDir(given: string, guests: boolean): Promise<{ dir: string; close: () => Promise<void> }> {
  let dir: string;
  let close = async (): Promise<void> => undefined;
  if (given !== '') {
    await mkdir(given, { recursive: true });
    dir = resolve(given);
  } else {
    dir = await mkdtemp(join(tmpdir(), 'sandboxd-sim-'));
    close = () => rm(dir, { recursive: true, force: true });
  }
  if (guests) await chmod(dir, 0o711);
  return { dir, close };
}

/** Guest uids are handed out by root only: refuse them at start otherwise, and close the directories named. */
async function prepareGuests(opts: SimOptions): Promise<void> {
  if (opts.guestUids === undefined) {
    if (opts.closedDirs.length > 0) throw new Error('--guest-closed-dirs needs --guest-uids');
    return;
  }
  if (!opts.dataPlane) throw new Error('--guest-uids needs --data-plane=on');
  if (process.getuid?.() !== 0)
    throw new Error('--guest-uids needs the simulator to run as root: it starts commands as other users and gives them their files');
  for (const d of opts.closedDirs) await chmod(d, 0o755);
}

/**
 * Starts 1..400 simulated sandboxd nodes in this process, each on its own loopback port
 * with its own state. Ports are basePort + i, or ephemeral with basePort 0.
 */
export async function startSim(input: StartSimOptions = {}): Promise<Sim> {
  const { clock = systemClock, logger = createLogger({ name: 'sandboxd-sim', level: 'silent' }), perNode, ...rest } = input;
  const opts = SimOptionsSchema.parse(rest);
  const handles: NodeHandle[] = [];
  const board = new GossipBoard(() => handles.map((h) => ({ addr: h.addr, state: h.state, reachable: () => h.reachable() })));
  await prepareGuests(opts);
  const data = opts.dataPlane ? await openDataDir(opts.dataDir, opts.guestUids !== undefined) : undefined;
  const shared: Shared = { keys: new KeyTable(), clock, logger, board, dataDir: data?.dir, guestUids: opts.guestUids };
  for (let i = 0; i < opts.nodes; i++) handles.push(buildNode(opts, i, shared, perNode?.(i) ?? {}));
  try {
    await Promise.all(handles.map((h) => h.state.dataPlane?.init()));
    for (const [i, h] of handles.entries()) await listen(h, opts.host, opts.basePort === 0 ? 0 : opts.basePort + i);
  } catch (err) {
    await Promise.all(handles.filter((h) => h.server.listening).map((h) => closeServer(h.server)));
    await data?.close();
    throw err;
  }
  if (data && opts.guestUids === undefined)
    logger.warn(
      { dataDir: data.dir },
      "data plane on: sandboxes run real processes on this host as the simulator's user, isolated by path only",
    );
  else if (data) logger.info({ dataDir: data.dir, guestUids: opts.guestUids }, 'data plane on: each sandbox runs as a uid of its own');
  // commands lead process groups of their own, which outlive the simulator unless killed on the way out
  const killOnExit = (): void => handles.forEach((h) => h.state.dataPlane?.groups.killEverything());
  if (data) process.once('exit', killOnExit);
  const clients = new SandboxdClientSet({ token: opts.token });
  wireMesh(handles, opts, clients, board);
  for (const h of handles) setPools(h.state, configPools(h.state.config.pools));
  const gossip = (): Promise<void> => {
    board.publish();
    return Promise.all(handles.filter((h) => !h.stopped).map((h) => h.mesh?.refresh())).then(
      () => undefined,
      (err: unknown) => logger.warn({ err }, 'gossip refresh failed'),
    );
  };
  await gossip();
  const live = (): NodeHandle[] => handles.filter((h) => !h.stopped);
  const stops = [
    every(clock, opts.refillTickMs, () => live().forEach((h) => h.state.pools.refillAll())),
    every(clock, opts.reapTickMs, () => live().forEach((h) => sweep(h.state))),
    every(clock, opts.gossipTickMs, () => void gossip()),
    every(clock, 3_600_000, () =>
      live().forEach((h) => {
        h.state.lineage.sweepCheckpoints(h.state.now(), h.state.config.checkpointTtlHours);
        void h.state.dataPlane?.roots.pruneCheckpoints((id) => h.state.lineage.checkpoints.has(id));
      }),
    ),
  ];
  const byName = new Map(handles.map((h) => [h.name, h]));
  const find = (name: string): NodeHandle => {
    const h = byName.get(name);
    if (h === undefined) throw new Error(`no simulated node named ${JSON.stringify(name)}`);
    return h;
  };
  const stopNode = async (h: NodeHandle): Promise<void> => {
    if (h.stopped) return;
    h.stopped = true;
    for (const sb of [...h.state.sandboxes.values()]) h.state.remove(sb);
    await closeServer(h.server);
    await h.state.dataPlane?.stop();
  };
  logger.info({ nodes: handles.length, speed: opts.speed }, 'simulated nodes listening');
  return {
    nodes: handles.map(({ name, url, port, addr, token }) => ({ name, url, port, addr, token })),
    clock,
    node: find,
    stopNode: (name) => stopNode(find(name)),
    stop: async () => {
      stops.forEach((s) => s());
      await Promise.all(handles.map(stopNode));
      await clients.close();
      process.off('exit', killOnExit);
      await data?.close();
    },
  };
}
