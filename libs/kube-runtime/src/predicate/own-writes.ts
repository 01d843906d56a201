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
 * so the filter can only ever cost a redundant reconcile, never a missed one. An update that
 * arrives while a write of its object is in flight (see `begin`) waits for the write's answer,
 * then is dropped or released straight to `releaseTo` (past any other predicate).
 */
export class OwnWrites {
  readonly #seen: TtlLru<string, true>;
  /** Writes sent and not answered yet, by object uid. */
  readonly #inFlight = new Map<string, number>();
  /** Updates of an object with a write in flight that the filter did not know yet, by uid. */
  readonly #held = new Map<string, KubeObject[]>();
  #release: ((obj: KubeObject) => void) | undefined;

  constructor(o: OwnWritesOptions = {}) {
    this.#seen = new TtlLru(o.maxEntries ?? 100_000, o.ttlMs ?? 60_000, o.now ?? Date.now);
  }

  get size(): number {
    return this.#seen.size;
  }

  /** Updates held while their object's writes are in flight (a figure for leak checks). */
  get held(): number {
    let n = 0;
    for (const h of this.#held.values()) n += h.length;
    return n;
  }

  /**
   * Where an update held during a write goes once the write is answered and the update turns
   * out not to be its version (normally the controller's enqueue). Without it nothing is held.
   */
  releaseTo(release: (obj: KubeObject) => void): void {
    this.#release = release;
  }

  /**
   * A write of the object `uid` is about to be sent. The watch event of a write often arrives
   * before its answer: until the returned function is called (after `note` of what the write
   * returned, or after it failed), an update of that object the filter does not know is held,
   * not passed. Each held update is then dropped when it is a version a write returned, and
   * released otherwise, so nothing is lost; it only waits for the answer.
   */
  begin(uid: string | undefined): () => void {
    if (!uid || this.#release === undefined) return () => undefined;
    this.#inFlight.set(uid, (this.#inFlight.get(uid) ?? 0) + 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const left = (this.#inFlight.get(uid) ?? 1) - 1;
      if (left > 0) {
        this.#inFlight.set(uid, left);
        return;
      }
      this.#inFlight.delete(uid);
      const held = this.#held.get(uid);
      if (held === undefined) return;
      this.#held.delete(uid);
      for (const obj of held) if (!this.take(obj)) this.#release?.(obj);
    };
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
    return {
      update: (obj, old) => {
        const specChanged = obj.metadata?.generation !== old.metadata?.generation;
        if (this.take(obj)) return specChanged;
        const uid = obj.metadata?.uid;
        if (specChanged || uid === undefined || !this.#inFlight.has(uid)) return true;
        const held = this.#held.get(uid);
        if (held === undefined) this.#held.set(uid, [obj]);
        else held.push(obj);
        return false;
      },
    };
  }
}

function keyOf(obj: KubeObject | undefined): string | undefined {
  const uid = obj?.metadata?.uid;
  const rv = obj?.metadata?.resourceVersion;
  return uid && rv ? `${uid}/${rv}` : undefined;
}
