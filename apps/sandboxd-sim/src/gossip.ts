import type { SandboxdClient } from '@sandbox-scale/sandboxd-client';
import type { MeshView, NodeState } from './node-state';
import type { Rng } from './rng';
import type { KeyTable, SimKey } from './wire-key';

/** What a node learns about a peer from gossip. */
export interface PeerSnapshot {
  warm: ReadonlyMap<string, number>;
  templates: ReadonlySet<string>;
}

export interface PeerLink {
  readonly addr: string;
  /** Undefined when the peer does not answer. */
  snapshot(): Promise<PeerSnapshot | undefined>;
  hasCheckpoint(id: string): Promise<boolean>;
}

/** A peer in the same process: read directly, unless it is stopped or partitioned. */
export function inProcessPeer(peer: NodeState, reachable: () => boolean): PeerLink {
  return {
    get addr() {
      return peer.advertiseAddr;
    },
    snapshot: () => {
      if (!reachable()) return Promise.resolve(undefined);
      const warm = new Map<string, number>();
      for (const p of peer.pools.list()) if (p.warm > 0) warm.set(p.key.id, p.warm);
      return Promise.resolve({ warm, templates: new Set(peer.lineage.templates.keys()) });
    },
    hasCheckpoint: (id) => Promise.resolve(reachable() && peer.lineage.checkpoints.has(id)),
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
        const res = await fetch(`${client.baseUrl}/v1/checkpoints/${encodeURIComponent(id)}/blob`, { method: 'HEAD', signal: AbortSignal.timeout(PEER_TIMEOUT_MS) });
        return res.status === 200;
      } catch {
        return false;
      }
    },
  };
}

/**
 * The node's gossip view, refreshed on a ~1 s tick, so it can be stale (as on a real mesh).
 * Tests freeze it to force a stale redirect.
 */
export class Mesh implements MeshView {
  #view = new Map<string, PeerSnapshot>();
  frozen = false;

  constructor(
    private readonly links: readonly PeerLink[],
    private readonly rng: Rng,
  ) {}

  async refresh(): Promise<void> {
    if (this.frozen) return;
    const snaps = await Promise.all(this.links.map(async (l) => [l.addr, await l.snapshot()] as const));
    if (this.frozen) return;
    const view = new Map<string, PeerSnapshot>();
    for (const [addr, snap] of snaps) if (snap) view.set(addr, snap);
    this.#view = view;
  }

  peerAddrs(): string[] {
    return this.links.map((l) => l.addr);
  }

  /** Power of two choices: two uniform draws, the warmer first. */
  warmPeers(key: SimKey): string[] {
    const cands: [string, number][] = [];
    for (const [addr, s] of this.#view) {
      const warm = s.warm.get(key.id) ?? 0;
      if (warm > 0) cands.push([addr, warm]);
    }
    if (cands.length <= 1) return cands.map(([a]) => a);
    const i = this.rng.int(cands.length);
    let j = this.rng.int(cands.length - 1);
    if (j >= i) j++;
    const [a, b] = [cands[i], cands[j]] as [[string, number], [string, number]];
    return a[1] >= b[1] ? [a[0], b[0]] : [b[0], a[0]];
  }

  templateOwners(key: SimKey): string[] {
    const out: string[] = [];
    for (const [addr, s] of this.#view) if (s.templates.has(key.id)) out.push(addr);
    return out.slice(0, 2);
  }

  async checkpointOwners(id: string): Promise<string[]> {
    const found = await Promise.all(this.links.map(async (l) => ((await l.hasCheckpoint(id)) ? l.addr : undefined)));
    return found.filter((a): a is string => a !== undefined).slice(0, 3);
  }
}
