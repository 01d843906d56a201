/**
 * A bounded cache whose entries expire: at most `maxEntries`, the least recently used one
 * goes first when a new key arrives. Eviction is one entry at a time, never a clear-all, so
 * flooding it with new keys pushes out only cold entries and costs the flooder its own.
 */
export class TtlLru<K, V> {
  // Map keeps insertion order: re-inserting on a hit moves the key to the young end.
  readonly #entries = new Map<K, { value: V; expires: number }>();

  constructor(
    private readonly maxEntries: number,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1) throw new RangeError(`maxEntries must be a positive integer, got ${maxEntries}`);
  }

  get size(): number {
    return this.#entries.size;
  }

  get(key: K): V | undefined {
    const hit = this.#entries.get(key);
    if (hit === undefined) return undefined;
    this.#entries.delete(key);
    if (hit.expires <= this.now()) return undefined;
    this.#entries.set(key, hit);
    return hit.value;
  }

  set(key: K, value: V): void {
    this.#entries.delete(key);
    if (this.ttlMs <= 0) return;
    const now = this.now();
    // expired entries at the old end go as new ones arrive, so entries nobody asks for again
    // (a write whose watch event never came) are held for one TTL, not until the cache is full
    for (const [k, e] of this.#entries) {
      if (e.expires > now) break;
      this.#entries.delete(k);
    }
    while (this.#entries.size >= this.maxEntries) {
      const oldest = this.#entries.keys().next();
      if (oldest.done === true) break;
      this.#entries.delete(oldest.value);
    }
    this.#entries.set(key, { value, expires: now + this.ttlMs });
  }

  delete(key: K): void {
    this.#entries.delete(key);
  }
}
