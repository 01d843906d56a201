import { SandboxScaleError } from '../errors/base';

/** Where a sandbox claimed moments ago lives, before any inventory reports it. */
export interface ClaimLocation {
  readonly namespace: string;
  readonly name: string;
  readonly node: string;
  /** sandboxd claim id (sb_...). */
  readonly claimId: string;
}

export interface ClaimIndexOptions {
  /** Upper bound on the estimated heap held by the index; least recently used entries go first. */
  readonly maxBytes: number;
}

/** The record both maps point at; `key` is `namespace/name` (namespaces hold no `/`). */
interface IndexRecord {
  readonly key: string;
  readonly node: string;
  readonly claimId: string;
  readonly bytes: number;
}

/*
 * Byte accounting, calibrated against heap snapshots on Node 20 x64 (no pointer compression):
 * - a string is a 16-byte header plus its characters (1 byte each if Latin-1, else 2),
 *   rounded up to 8;
 * - the record object is a 24-byte header plus four 8-byte fields;
 * - each of the two Maps spends 3 words per entry plus its hash buckets and the slack of
 *   doubling growth: about 40 bytes per entry per Map.
 * Node names are interned (there are few nodes), so they cost nothing per entry. The
 * `namespace/name` key is built with join(), which yields one flat string; a template literal
 * would keep a 32-byte cons string on top of the flattened copy.
 * A typical entry (`team-a/sandbox-abc12`, `sb_` + 16 hex) is estimated at ~216 bytes;
 * measured 209 B at 200 k entries and 233 B at 150 k (Map slack varies with fill), in line
 * with the ~206 B the reference planned. bench/ measures the real figure.
 */
const RECORD_BYTES = 24 + 4 * 8;
const MAP_ENTRY_BYTES = 40;
const STRING_HEADER_BYTES = 16;

function stringBytes(s: string): number {
  // eslint-disable-next-line no-control-regex
  const perChar = /^[\u0000-\u00ff]*$/.test(s) ? 1 : 2;
  return STRING_HEADER_BYTES + Math.ceil((s.length * perChar) / 8) * 8;
}

/** Estimated heap bytes of one index entry. */
export function estimateClaimIndexEntryBytes(namespace: string, name: string, claimId: string): number {
  return RECORD_BYTES + 2 * MAP_ENTRY_BYTES + stringBytes(`${namespace}/${name}`) + stringBytes(claimId);
}

export class InvalidClaimIndexOptionsError extends SandboxScaleError {}

/**
 * The claim-time index: `namespace/name` and claim id -> node and
 * claim id, so Get, Delete and lifecycle verbs find a sandbox created moments ago without
 * waiting a publish interval. A bounded LRU: every put or lookup marks an entry recent; when
 * the estimated size passes `maxBytes` the least recently used entries are evicted. All
 * operations are O(1).
 */
export class ClaimIndex {
  readonly #maxBytes: number;
  /** Insertion order is recency order: the first key is the least recently used. */
  readonly #byName = new Map<string, IndexRecord>();
  readonly #byClaimId = new Map<string, IndexRecord>();
  readonly #nodeNames = new Map<string, string>();
  #bytes = 0;

  constructor(opts: ClaimIndexOptions) {
    if (!Number.isFinite(opts.maxBytes) || opts.maxBytes <= 0)
      throw new InvalidClaimIndexOptionsError(`maxBytes must be a positive number, got ${opts.maxBytes}`);
    this.#maxBytes = opts.maxBytes;
  }

  /** Records (or replaces) where `namespace/name` lives; a replaced claim id stops resolving. */
  put(loc: ClaimLocation): void {
    const key = [loc.namespace, loc.name].join('/');
    this.#deleteKey(key);
    const prior = this.#byClaimId.get(loc.claimId);
    if (prior !== undefined) this.#remove(prior);
    const rec: IndexRecord = {
      key,
      node: this.#intern(loc.node),
      claimId: loc.claimId,
      bytes: estimateClaimIndexEntryBytes(loc.namespace, loc.name, loc.claimId),
    };
    this.#byName.set(key, rec);
    this.#byClaimId.set(rec.claimId, rec);
    this.#bytes += rec.bytes;
    this.#evict();
  }

  getByName(namespace: string, name: string): ClaimLocation | undefined {
    return this.#touch(this.#byName.get(`${namespace}/${name}`));
  }

  getByClaimId(claimId: string): ClaimLocation | undefined {
    return this.#touch(this.#byClaimId.get(claimId));
  }

  /** Forgets `namespace/name` (after a release); true when it was indexed. */
  deleteByName(namespace: string, name: string): boolean {
    return this.#deleteKey(`${namespace}/${name}`);
  }

  deleteByClaimId(claimId: string): boolean {
    const rec = this.#byClaimId.get(claimId);
    if (rec === undefined) return false;
    this.#remove(rec);
    return true;
  }

  get size(): number {
    return this.#byName.size;
  }

  /** Estimated heap held by the entries. */
  get bytes(): number {
    return this.#bytes;
  }

  clear(): void {
    this.#byName.clear();
    this.#byClaimId.clear();
    this.#nodeNames.clear();
    this.#bytes = 0;
  }

  #intern(node: string): string {
    const known = this.#nodeNames.get(node);
    if (known !== undefined) return known;
    this.#nodeNames.set(node, node);
    return node;
  }

  #touch(rec: IndexRecord | undefined): ClaimLocation | undefined {
    if (rec === undefined) return undefined;
    this.#byName.delete(rec.key);
    this.#byName.set(rec.key, rec);
    const slash = rec.key.indexOf('/');
    return { namespace: rec.key.slice(0, slash), name: rec.key.slice(slash + 1), node: rec.node, claimId: rec.claimId };
  }

  #deleteKey(key: string): boolean {
    const rec = this.#byName.get(key);
    if (rec === undefined) return false;
    this.#remove(rec);
    return true;
  }

  #remove(rec: IndexRecord): void {
    this.#byName.delete(rec.key);
    if (this.#byClaimId.get(rec.claimId) === rec) this.#byClaimId.delete(rec.claimId);
    this.#bytes -= rec.bytes;
  }

  #evict(): void {
    while (this.#bytes > this.#maxBytes) {
      const oldest = this.#byName.values().next();
      if (oldest.done) return;
      this.#remove(oldest.value);
    }
  }
}
