import { objectKey } from '../client/object-meta';

interface Entry<T> {
  obj: T;
  resourceVersion: string;
}

export type StoreChange<T> = { type: 'add'; obj: T } | { type: 'update'; obj: T; old: T } | { type: 'delete'; obj: T };

/** Freezes `value` and everything it holds, as the store keeps every object it hands out. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** The list() key of every namespace: no namespace is named with a NUL. */
const ALL = '\0';

/**
 * Cache keyed namespace -> name. Stored objects are frozen: readers get views they cannot
 * mutate, so one reconciler's edit never leaks into another's read.
 */
export class ObjectStore<T> {
  private readonly byNs = new Map<string, Map<string, Entry<T>>>();
  private count = 0;
  /**
   * The frozen arrays list() handed out, by namespace ('\0' for all), until the next change:
   * callers that list on every operation (node choice on every claim) get the same array
   * instead of a copy of the store each time.
   */
  private readonly lists = new Map<string, readonly T[]>();

  get size(): number {
    return this.count;
  }

  get(namespace: string | undefined, name: string): T | undefined {
    return this.byNs.get(namespace ?? '')?.get(name)?.obj;
  }

  list(namespace?: string): readonly T[] {
    const key = namespace ?? ALL;
    const cached = this.lists.get(key);
    if (cached !== undefined) return cached;
    const pick = (m: Map<string, Entry<T>>): T[] => [...m.values()].map((e) => e.obj);
    const out = Object.freeze(
      namespace !== undefined ? pick(this.byNs.get(namespace) ?? new Map()) : [...this.byNs.values()].flatMap(pick),
    );
    this.lists.set(key, out);
    return out;
  }

  keys(): string[] {
    return [...this.byNs.entries()].flatMap(([ns, m]) => [...m.keys()].map((n) => objectKey(ns, n)));
  }

  /** Inserts or replaces; returns the change, or undefined when the resourceVersion is unchanged. */
  upsert(namespace: string | undefined, name: string, obj: T, resourceVersion: string): StoreChange<T> | undefined {
    const ns = namespace ?? '';
    let m = this.byNs.get(ns);
    if (!m) {
      m = new Map();
      this.byNs.set(ns, m);
    }
    const prev = m.get(name);
    if (prev && prev.resourceVersion === resourceVersion) return undefined;
    m.set(name, { obj: deepFreeze(obj), resourceVersion });
    this.lists.clear();
    if (!prev) {
      this.count++;
      return { type: 'add', obj };
    }
    return { type: 'update', obj, old: prev.obj };
  }

  remove(namespace: string | undefined, name: string): StoreChange<T> | undefined {
    const ns = namespace ?? '';
    const m = this.byNs.get(ns);
    const prev = m?.get(name);
    if (!m || !prev) return undefined;
    m.delete(name);
    this.lists.clear();
    if (m.size === 0) this.byNs.delete(ns);
    this.count--;
    return { type: 'delete', obj: prev.obj };
  }
}
