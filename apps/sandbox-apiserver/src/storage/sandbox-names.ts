import type { ClaimIndex } from '@sandbox-scale/scale-core';
import type { SandboxCache } from './sandbox-cache';

/**
 * The one "name taken" check of everything that makes a Sandbox (a create, a snapshot claim):
 * a name is taken while the cache serves it, the claim index lists it, or a make of it is under
 * way. One set of names under way for all of them, so two makes of one name cannot both reach a
 * node.
 */
export class SandboxNames {
  readonly #underWay = new Set<string>();

  constructor(private readonly reads: { readonly cache: Pick<SandboxCache, 'get'>; readonly index: Pick<ClaimIndex, 'getByName'> }) {}

  isTaken(namespace: string, name: string): boolean {
    return (
      this.#underWay.has(keyOf(namespace, name)) ||
      this.reads.cache.get(namespace, name) !== undefined ||
      this.reads.index.getByName(namespace, name) !== undefined
    );
  }

  /** Marks the name as under way until the returned release is called (in a `finally`). */
  hold(namespace: string, name: string): () => void {
    const key = keyOf(namespace, name);
    this.#underWay.add(key);
    return () => this.#underWay.delete(key);
  }
}

const keyOf = (namespace: string, name: string): string => `${namespace}/${name}`;
