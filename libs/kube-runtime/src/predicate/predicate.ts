import type { KubeObject } from '../client/object-meta';

/** Filters events before they become requests; a missing function lets the event through. */
export interface Predicate<T> {
  create?(obj: T): boolean;
  update?(obj: T, old: T): boolean;
  delete?(obj: T): boolean;
}

/** Only spec changes: status writes (which do not bump generation) do not re-trigger. */
export function generationChanged<T extends KubeObject>(): Predicate<T> {
  return { update: (obj, old) => obj.metadata?.generation !== old.metadata?.generation };
}

export function labelsChanged<T extends KubeObject>(): Predicate<T> {
  const same = (a: Record<string, string> = {}, b: Record<string, string> = {}): boolean => {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => a[k] === b[k]);
  };
  return { update: (obj, old) => !same(obj.metadata?.labels, old.metadata?.labels) };
}

/** Passes when every predicate passes. */
export function and<T>(...ps: Predicate<T>[]): Predicate<T> {
  return {
    create: (o) => ps.every((p) => p.create?.(o) ?? true),
    update: (o, old) => ps.every((p) => p.update?.(o, old) ?? true),
    delete: (o) => ps.every((p) => p.delete?.(o) ?? true),
  };
}

/** Passes when any predicate passes. */
export function or<T>(...ps: Predicate<T>[]): Predicate<T> {
  return {
    create: (o) => ps.some((p) => p.create?.(o) ?? true),
    update: (o, old) => ps.some((p) => p.update?.(o, old) ?? true),
    delete: (o) => ps.some((p) => p.delete?.(o) ?? true),
  };
}
