import { normalizePoolKey, poolKeyId, type PoolKey, type PoolKeyLike } from '../pool-key/pool-key';
import { randomIndex, type Rng } from './random';
import { forEachWarmNode, inventoryName, pickPowerOfTwo, type InventoryLike, type WarmCandidate } from './warm-candidates';

interface NodeLedger {
  /** The inventory version the local counts were taken against. */
  version: string;
  /** When that version was first seen here (ms). */
  seenAtMs: number;
  /** poolKeyId -> sandboxes handed out (or known gone) since that version was published. */
  taken: Map<string, number>;
  /** The sync pass that last listed the node (nodes of an older pass are forgotten). */
  pass: number;
}

/** A node that advertises a key in a synced list, with the ledger entry its count is taken from. */
interface Advertised {
  node: string;
  addr: string;
  advertised: number;
  ledger: NodeLedger | undefined;
}

/**
 * A frozen list the ledger synced against, kept so the next claims against the same list choose
 * without walking it: a frozen array (an informer cache's list, handed out until its store changes)
 * cannot change under the same identity, so until a node's counts lapse nothing the walk would find
 * has changed but the local counts, which are read live.
 */
interface SyncedList {
  list: readonly InventoryLike[];
  /** No node's counts lapse before this instant (the ledger's clock). */
  holdsUntil: number;
  /** Pool key id -> the nodes that advertise it, in list order (built on first use). */
  byKey: Map<string, Advertised[]>;
}

/** Draws of one index before the choice walks the list instead (every node nearly dry). */
const DRAWS_BEFORE_WALK = 8;

/** What identifies one published inventory: its resourceVersion, else its advertised pools. */
function versionOf(inv: InventoryLike): string {
  return inv.metadata?.resourceVersion ?? JSON.stringify(inv.pools ?? []);
}

const DECIMAL = /^[0-9]+$/;

/**
 * Whether `next` replaces `cur`. Integer resourceVersions (etcd revisions) must grow, so a
 * lagging copy of an older inventory cannot wipe the counts; other versions just differ.
 */
function isNewer(next: string, cur: string): boolean {
  // the common case on every claim: the node has not republished since the last one
  if (next === cur) return false;
  if (DECIMAL.test(next) && DECIMAL.test(cur)) return BigInt(next) > BigInt(cur);
  return next !== cur;
}

/**
 * Local warm-capacity bookkeeping between inventory publishes.
 * Inventories are 5–30 s stale, so without this every claim of a burst sees the same counts
 * and the sampler keeps favouring the node that looked warmest. Each choice takes one from
 * the chosen node's count; a capacity miss empties it; a newer inventory from the node resets
 * its counts, because the node's own report then includes what was handed out.
 * Synchronous, so concurrent claims in one process cannot choose against the same count.
 *
 * Local counts also lapse after `maxAgeMs` against one version: a node that hands out its warm
 * sandboxes and refills them between two publishes publishes nothing new (the same counts),
 * and counts kept against that version forever would hide its capacity for good. After the
 * lapse a claim may meet a node that really is empty; its 429 empties the count again.
 */
export interface CapacityLedgerOptions {
  /** How long counts taken against one inventory version hold; default 10 s. */
  maxAgeMs?: number;
  /** Monotonic milliseconds; default performance.now. */
  now?: () => number;
}

export class CapacityLedger {
  readonly #nodes = new Map<string, NodeLedger>();
  #pass = 0;
  /** The key `choose` was last asked for, as given, with its normalised form and id. */
  #lastKey: { template: string; net: string | undefined; size: string | undefined; k: PoolKey; id: string } | undefined;
  readonly #maxAgeMs: number;
  readonly #now: () => number;
  #synced: SyncedList | undefined;

  constructor(o: CapacityLedgerOptions = {}) {
    this.#maxAgeMs = o.maxAgeMs ?? 10_000;
    this.#now = o.now ?? (() => performance.now());
  }

  /**
   * Candidates for `key` with local takings subtracted. Pass every known inventory: nodes
   * missing from the list are forgotten.
   */
  candidates(inventories: readonly InventoryLike[], key: PoolKeyLike): WarmCandidate[] {
    const k = normalizePoolKey(key);
    return this.#candidates(inventories, k, poolKeyId(k));
  }

  /**
   * Power-of-two choice over `candidates()`, taking one from the chosen node; undefined when none is
   * left. A frozen list is taken to be frozen all the way down, as an informer cache's is: chosen
   * from again without a walk until a lapse is due (see SyncedList). Any other list is walked.
   */
  choose(inventories: readonly InventoryLike[], key: PoolKeyLike, rng: Rng): WarmCandidate | undefined {
    // the key is normalised and named once for the whole choice, and claims of the key chosen
    // last (most claims of a burst) reuse that: this runs on every claim
    let last = this.#lastKey;
    if (last === undefined || last.template !== key.template || last.net !== key.net || last.size !== key.size) {
      const k = normalizePoolKey(key);
      last = { template: key.template, net: key.net, size: key.size, k, id: poolKeyId(k) };
      this.#lastKey = last;
    }
    const { k, id } = last;
    const synced = this.#synced;
    if (synced !== undefined && synced.list === inventories && this.#now() <= synced.holdsUntil) {
      const chosen = this.#chooseSynced(synced, k, id, rng);
      if (chosen !== undefined) return chosen;
      // every node drawn was dry: the walk below says whether any node is left
    }
    const list = this.#candidates(inventories, k, id);
    const chosen = list[pickPowerOfTwo(list, rng)];
    if (chosen !== undefined) this.#take(chosen.node, id, 1);
    return chosen;
  }

  /**
   * Power of two choices over a list synced before, without walking it: each of the two indices
   * is drawn uniformly over the nodes advertising the key, and drawn again while it lands on a node
   * with nothing left, which is a uniform draw over the nodes with something left, as the walk's
   * candidates are; the second wins only if strictly warmer. Undefined after DRAWS_BEFORE_WALK dry
   * draws in a row (the caller walks the list then), so a dry fleet costs what it cost before.
   */
  #chooseSynced(synced: SyncedList, key: PoolKey, id: string, rng: Rng): WarmCandidate | undefined {
    let nodes = synced.byKey.get(id);
    if (nodes === undefined) {
      const found: Advertised[] = [];
      forEachWarmNode(synced.list, key, (node, addr, advertised) => found.push({ node, addr, advertised, ledger: this.#nodes.get(node) }));
      nodes = found;
      synced.byKey.set(id, nodes);
    }
    const first = drawWarm(nodes, id, rng);
    if (first === undefined) return undefined;
    const second = drawWarm(nodes, id, rng);
    if (second === undefined) return undefined;
    const [a, warm] = second.warm > first.warm ? [second.a, second.warm] : [first.a, first.warm];
    this.#take(a.node, id, 1);
    return { node: a.node, addr: a.addr, warm };
  }

  /** Records `n` sandboxes of `key` as handed out by `node`. */
  take(node: string, key: PoolKeyLike, n: number): void {
    this.#take(node, poolKeyId(key), n);
  }

  #take(node: string, id: string, n: number): void {
    const ledger = this.#nodes.get(node);
    if (ledger === undefined) return;
    ledger.taken.set(id, Math.max(0, (ledger.taken.get(id) ?? 0) + n));
  }

  #candidates(inventories: readonly InventoryLike[], key: PoolKey, id: string): WarmCandidate[] {
    this.#sync(inventories);
    const out: WarmCandidate[] = [];
    forEachWarmNode(inventories, key, (node, addr, advertised) => {
      const ledger = this.#nodes.get(node);
      const warm = advertised - takenOf(ledger, id);
      if (warm > 0) out.push({ node, addr, warm });
    });
    return out;
  }

  /** The claim did not happen (a non-capacity failure): give the one taken by `choose` back. */
  putBack(node: string, key: PoolKeyLike): void {
    this.take(node, key, -1);
  }

  /** The node answered "at capacity": treat its advertised count as gone until it republishes. */
  exhaust(node: string, key: PoolKeyLike): void {
    this.take(node, key, Number.MAX_SAFE_INTEGER);
  }

  /** Nodes currently tracked (for tests and metrics). */
  get size(): number {
    return this.#nodes.size;
  }

  #sync(inventories: readonly InventoryLike[]): void {
    const pass = ++this.#pass;
    const now = this.#now();
    let listed = 0;
    // the earliest a listed node's counts lapse: until then a frozen list needs no walk (a name
    // listed twice may count its older copy, which only brings the next walk sooner)
    let oldest = now;
    // whatever this walk changes (new versions, lapses, nodes forgotten), a list synced before is
    // read again from the start
    this.#synced = undefined;
    for (const inv of inventories) {
      const name = inventoryName(inv);
      const version = versionOf(inv);
      const cur = this.#nodes.get(name);
      if (cur === undefined || isNewer(version, cur.version)) {
        // a name listed twice in one pass is counted once
        if (cur === undefined || cur.pass !== pass) listed++;
        this.#nodes.set(name, { version, seenAtMs: now, taken: new Map(), pass });
        continue;
      }
      if (cur.pass !== pass) {
        cur.pass = pass;
        listed++;
      }
      if (now - cur.seenAtMs > this.#maxAgeMs) {
        // the node's own report has not moved: stop trusting what was counted against it
        cur.taken.clear();
        cur.seenAtMs = now;
      }
      oldest = Math.min(oldest, cur.seenAtMs);
    }
    // every tracked node was listed (the usual case): nothing to forget, no second pass
    if (listed !== this.#nodes.size) for (const [name, ledger] of this.#nodes) if (ledger.pass !== pass) this.#nodes.delete(name);
    if (Object.isFrozen(inventories)) this.#synced = { list: inventories, holdsUntil: oldest + this.#maxAgeMs, byKey: new Map() };
  }
}

/** Sandboxes of key `id` taken from a node since its current version (a node with none taken skips the lookup). */
function takenOf(ledger: NodeLedger | undefined, id: string): number {
  return ledger === undefined || ledger.taken.size === 0 ? 0 : (ledger.taken.get(id) ?? 0);
}

/** One uniform draw over `nodes` that lands on a node with something left of key `id`; undefined after DRAWS_BEFORE_WALK dry draws. */
function drawWarm(nodes: readonly Advertised[], id: string, rng: Rng): { a: Advertised; warm: number } | undefined {
  if (nodes.length === 0) return undefined;
  for (let i = 0; i < DRAWS_BEFORE_WALK; i++) {
    const a = nodes[randomIndex(rng, nodes.length)];
    if (a === undefined) continue;
    const warm = a.advertised - takenOf(a.ledger, id);
    if (warm > 0) return { a, warm };
  }
  return undefined;
}
