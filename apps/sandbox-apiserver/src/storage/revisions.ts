/**
 * Served resourceVersions: decimal integers that only grow. A change seen in a NodeInventory
 * at etcd revision R gets R x 1000, so every replica (and a restarted one) serves the same
 * number for it; changes made here between two inventory revisions (create, delete) take the
 * next integer. 1000 local changes fit between two etcd revisions before they would overlap.
 */
export const REVISION_SCALE = 1000;

export class Revisions {
  #current = 0;

  get current(): number {
    return this.#current;
  }

  /** An etcd resourceVersion was observed (inventory change or bookmark); the revision to use. */
  observe(etcdRv: string | undefined): number {
    const n = etcdRv !== undefined && /^[0-9]+$/.test(etcdRv) ? Number(etcdRv) * REVISION_SCALE : 0;
    this.#current = Math.max(this.#current + 1, n);
    return this.#current;
  }

  /** Moves the list revision forward to an etcd revision without a change of ours. */
  advanceTo(etcdRv: string | undefined): void {
    const n = etcdRv !== undefined && /^[0-9]+$/.test(etcdRv) ? Number(etcdRv) * REVISION_SCALE : 0;
    this.#current = Math.max(this.#current, n);
  }

  next(): number {
    this.#current += 1;
    return this.#current;
  }
}
