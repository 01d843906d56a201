import type { Row } from './sandbox-cache';

/**
 * The list order as one comparable string: namespace, NUL, name. NUL sorts below every
 * character a name may hold, so `a/x` < `a-b/x` as compareByNamespaceName orders them.
 */
export function sortKeyOf(namespace: string, name: string): string {
  return `${namespace}\u0000${name}`;
}

/** sortKeyOf for a cache key (`namespace/name`; neither part may contain `/`). */
export function sortKeyOfViewKey(key: string): string {
  return key.replace('/', '\u0000');
}

/** An immutable, sorted picture of the cache: pages are cut from it by binary search. */
export interface RowsSnapshot {
  readonly keys: readonly string[];
  readonly rows: readonly Row[];
}

/** First index whose key is >= k. */
export function lowerBound(keys: readonly string[], k: string): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((keys[mid] as string) < k) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** First index whose key is > k. */
export function upperBound(keys: readonly string[], k: string): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((keys[mid] as string) <= k) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const EMPTY: RowsSnapshot = { keys: [], rows: [] };

/**
 * The cache's rows kept in list order without sorting per request: changes are noted as they
 * happen and folded into a new immutable snapshot only when a list asks for one — one
 * linear merge per changed revision (O(n + m log m)), never per page.
 */
export class SortedRows {
  #latest: RowsSnapshot = EMPTY;
  /** sort key -> the row now, or null once gone; since #latest was built. */
  #pending = new Map<string, Row | null>();

  /** The row now under its cache key (`namespace/name`). */
  set(row: Row): void {
    this.#pending.set(sortKeyOfViewKey(row.key), row);
  }

  delete(viewKey: string): void {
    this.#pending.set(sortKeyOfViewKey(viewKey), null);
  }

  /** True when the next snapshot() would differ from the last one. */
  get dirty(): boolean {
    return this.#pending.size > 0;
  }

  snapshot(): RowsSnapshot {
    if (this.#pending.size === 0) return this.#latest;
    const changes = [...this.#pending].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    this.#pending = new Map();
    const old = this.#latest;
    const keys: string[] = [];
    const rows: Row[] = [];
    let i = 0;
    for (const [key, row] of changes) {
      while (i < old.keys.length && (old.keys[i] as string) < key) {
        keys.push(old.keys[i] as string);
        rows.push(old.rows[i] as Row);
        i++;
      }
      // an existing key is replaced or dropped; a new one is inserted here
      if (i < old.keys.length && old.keys[i] === key) i++;
      if (row !== null) {
        keys.push(key);
        rows.push(row);
      }
    }
    for (; i < old.keys.length; i++) {
      keys.push(old.keys[i] as string);
      rows.push(old.rows[i] as Row);
    }
    this.#latest = { keys, rows };
    return this.#latest;
  }
}
