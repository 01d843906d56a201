import type { KubeObject } from '../client/object-meta';
import { TtlLru } from '../auth/ttl-lru';
import type { Predicate } from './predicate';

export interface OwnWritesOptions {
  /** How long a write is remembered waiting for its watch event. Default 60 s. */
  ttlMs?: number;
  /** Writes remembered at once; the oldest goes first. Default 100 000. */
  maxEntries?: number;
  now?: () => number;
}

/**
 * The resourceVersions a controller's own writes produced, so their watch events do not start
 * another full reconcile: the reconcile that wrote already acted on what it wrote. Only the
 * exact object version a write returned is skipped; any later change by anyone (a new
 * resourceVersion) passes, and so does an event whose write was forgotten (expired or evicted),
 * so the filter can only ever cost a redundant reconcile, never a missed one.
 */
export class OwnWrites {
  readonly #seen: TtlLru<string, true>;

  constructor(o: OwnWritesOptions = {}) {
    this.#seen = new TtlLru(o.maxEntries ?? 100_000, o.ttlMs ?? 60_000, o.now ?? Date.now);
  }

  get size(): number {
    return this.#seen.size;
  }

  /** Remembers the object a write returned (no-op without uid and resourceVersion). */
  note(obj: KubeObject | undefined): void {
    const key = keyOf(obj);
    if (key !== undefined) this.#seen.set(key, true);
  }

  /** Whether `obj` is exactly a version this process wrote; each version is matched once. */
  take(obj: KubeObject): boolean {
    const key = keyOf(obj);
    if (key === undefined || this.#seen.get(key) === undefined) return false;
    this.#seen.delete(key);
    return true;
  }

  /**
   * Passes every update except the watch event of an own write. A version that also changed
   * the spec (generation, which a delete bumps too) still passes: a write that changed nothing
   * returns the current version, which may be someone else's change not seen yet.
   */
  predicate<T extends KubeObject>(): Predicate<T> {
    return { update: (obj, old) => !this.take(obj) || obj.metadata?.generation !== old.metadata?.generation };
  }
}

function keyOf(obj: KubeObject | undefined): string | undefined {
  const uid = obj?.metadata?.uid;
  const rv = obj?.metadata?.resourceVersion;
  return uid && rv ? `${uid}/${rv}` : undefined;
}
