/**
 * One listing of something costly (every node's sandboxes) shared by every caller that wants
 * it now, none served from a listing that began before it asked: a call while a listing runs
 * waits for the next one, which starts when the current ends and serves all that waited. So a
 * burst of N callers costs at most two listings, however many ask, and each sees what existed
 * when it asked.
 */
export class FreshListing<T> {
  #running: Promise<T> | undefined;
  #next: Promise<T> | undefined;

  constructor(private readonly list: () => Promise<T>) {}

  /** A listing that started no earlier than this call. */
  fresh(): Promise<T> {
    if (this.#next !== undefined) return this.#next;
    if (this.#running === undefined) return this.#start();
    const next = this.#running
      .catch(() => undefined)
      .then(() => {
        this.#next = undefined;
        return this.#start();
      });
    this.#next = next;
    return next;
  }

  /** Listings started so far (tests). */
  started = 0;

  #start(): Promise<T> {
    this.started++;
    const p = this.list().finally(() => {
      if (this.#running === p) this.#running = undefined;
    });
    this.#running = p;
    return p;
  }
}
