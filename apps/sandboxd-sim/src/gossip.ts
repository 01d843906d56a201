import type { SandboxdClient } from '@sandbox-scale/sandboxd-client';
import type { MeshView, NodeState } from './node-state';
import type { Rng } from './rng';
import type { KeyTable, SimKey } from './wire-key';

/** What a node learns about a peer from gossip. */
export interface PeerSnapshot {
  warm: ReadonlyMap<string, number>;
  templates: ReadonlySet<string>;
}

/** A node of this process, as its peers see it. */
export interface LocalPeer {
  readonly addr: string;
  readonly state: NodeState;
  reachable(): boolean;
}

/** Every reachable node of the process at one moment, by address. */
export type GossipRound = ReadonlyMap<string, PeerSnapshot>;

function snapshotOf(node: NodeState): PeerSnapshot {
  const warm = new Map<string, number>();
  for (const p of node.pools.list()) if (p.warm > 0) warm.set(p.key.id, p.warm);
  return { warm, templates: new Set(node.lineage.templates.keys()) };
}

/**
 * One gossip round for the whole process, shared by every node's view: a 400-node mesh
 * holds 400 snapshots per round, not 400 × 399, and no per-pair objects at all.
 */
export class GossipBoard {
  #round: GossipRound = new Map();

  constructor(private readonly peers: () => readonly LocalPeer[]) {}

  get round(): GossipRound {
    return this.#round;
  }

  publish(): GossipRound {
    const round = new Map<string, PeerSnapshot>();
    for (const p of this.peers()) if (p.reachable()) round.set(p.addr, snapshotOf(p.state));
    this.#round = round;
    return round;
  }
}

/** A peer named by flag: snapshots come from wherever it lives. */
export interface PeerLink {
  readonly addr: string;
  /** Undefined when the peer does not answer. */
  snapshot(): PeerSnapshot | undefined | Promise<PeerSnapshot | undefined>;
  hasCheckpoint(id: string): Promise<boolean>;
}

/** A flag-named peer that happens to live in this process. */
export function localLink(peer: LocalPeer, board: GossipBoard): PeerLink {
  return {
    addr: peer.addr,
    snapshot: () => board.round.get(peer.addr),
    hasCheckpoint: (id) => Promise.resolve(peer.reachable() && peer.state.lineage.checkpoints.has(id)),
  };
}

const PEER_TIMEOUT_MS = 1000;

/**
 * A peer in another process: warm counts from its `GET /v1/info` (with this node's token).
 * Promoted templates are not visible over the public API, so such peers never own one.
 */
export function httpPeer(addr: string, client: SandboxdClient, keys: KeyTable): PeerLink {
  return {
    addr,
    snapshot: async () => {
      try {
        const info = await client.info({ signal: AbortSignal.timeout(PEER_TIMEOUT_MS) });
        const warm = new Map<string, number>();
        for (const p of info.pools) if (p.warm > 0) warm.set(keys.parse(p.key.template, p.key.net, p.key.size).id, p.warm);
        return { warm, templates: new Set<string>() };
      } catch {
        return undefined;
      }
    },
    hasCheckpoint: async (id) => {
      try {
        const res = await fetch(`${client.baseUrl}/v1/checkpoints/${encodeURIComponent(id)}/blob`, {
          method: 'HEAD',
          signal: AbortSignal.timeout(PEER_TIMEOUT_MS),
        });
        return res.status === 200;
      } catch {
        return false;
      }
    },
  };
}

export interface MeshOptions {
  self: string;
  /** Every node of the process is a peer (mesh mode); absent when peers come only by flag. */
  board?: GossipBoard;
  /** The process's nodes (for checkpoint probes in mesh mode). */
  localPeers: readonly LocalPeer[];
  /** Peers named by flag (other processes, or chosen nodes of this one). */
  links: readonly PeerLink[];
  rng: Rng;
}

/**
 * The node's gossip view, refreshed on a ~1 s tick, so it can be stale (as on a real mesh).
 * Tests freeze it to force a stale redirect.
 */
export class Mesh implements MeshView {
  frozen = false;
  #round: GossipRound = new Map();
  #linked = new Map<string, PeerSnapshot>();
  #addrs: string[] | undefined;

  constructor(private readonly opts: MeshOptions) {}

  async refresh(): Promise<void> {
    if (this.frozen) return;
    const linked = new Map<string, PeerSnapshot>();
    const remote: Promise<void>[] = [];
    for (const link of this.opts.links) {
      const snap = link.snapshot();
      if (snap instanceof Promise) {
        remote.push(
          snap.then((s) => {
            if (s) linked.set(link.addr, s);
          }),
        );
      } else if (snap) linked.set(link.addr, snap);
    }
    if (remote.length > 0) await Promise.all(remote);
    if (this.frozen) return;
    this.#round = this.opts.board?.round ?? new Map();
    this.#linked = linked;
  }

  peerAddrs(): string[] {
    this.#addrs ??= [
      ...(this.opts.board ? this.opts.localPeers.map((p) => p.addr).filter((a) => a !== this.opts.self) : []),
      ...this.opts.links.map((l) => l.addr),
    ];
    return this.#addrs;
  }

  *#seen(): Generator<[string, PeerSnapshot]> {
    for (const entry of this.#round) if (entry[0] !== this.opts.self) yield entry;
    yield* this.#linked;
  }

  /** Power of two choices: two distinct uniform draws, the warmer first. */
  warmPeers(key: SimKey): string[] {
    const cands: [string, number][] = [];
    for (const [addr, s] of this.#seen()) {
      const warm = s.warm.get(key.id) ?? 0;
      if (warm > 0) cands.push([addr, warm]);
    }
    if (cands.length <= 1) return cands.map(([a]) => a);
    const i = this.opts.rng.int(cands.length);
    let j = this.opts.rng.int(cands.length - 1);
    if (j >= i) j++;
    const [a, b] = [cands[i], cands[j]] as [[string, number], [string, number]];
    return a[1] >= b[1] ? [a[0], b[0]] : [b[0], a[0]];
  }

  templateOwners(key: SimKey): string[] {
    const out: string[] = [];
    for (const [addr, s] of this.#seen()) if (s.templates.has(key.id)) out.push(addr);
    return out.slice(0, 2);
  }

  /** Probed live, not from gossip: at most 3 owners. */
  async checkpointOwners(id: string): Promise<string[]> {
    const local = this.opts.board
      ? this.opts.localPeers
          .filter((p) => p.addr !== this.opts.self && p.reachable() && p.state.lineage.checkpoints.has(id))
          .map((p) => p.addr)
      : [];
    const linked = await Promise.all(this.opts.links.map(async (l) => ((await l.hasCheckpoint(id)) ? l.addr : undefined)));
    return [...local, ...linked.filter((a): a is string => a !== undefined)].slice(0, 3);
  }
}
