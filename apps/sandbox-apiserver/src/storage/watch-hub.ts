import { ResourceVersionTooOldError, type Listener, type SandboxEvent } from '../resource/events';

/**
 * Fan-in of every sandbox change with a bounded history, so a watch can resume from a
 * resourceVersion: events newer than it are replayed, then live ones follow. History older
 * than the ring is gone; asking for it is 410 Expired.
 */
export class WatchHub {
  readonly #ring: SandboxEvent[] = [];
  #start = 0;
  #floor: number;
  readonly #listeners = new Set<Listener>();

  constructor(
    private readonly capacity = 10_000,
    floor = 0,
  ) {
    this.#floor = floor;
  }

  /** Revisions at or below this one are no longer replayable. */
  get floor(): number {
    return this.#floor;
  }

  set floor(rev: number) {
    this.#floor = Math.max(this.#floor, rev);
  }

  emit(ev: SandboxEvent): void {
    if (this.#ring.length - this.#start >= this.capacity) {
      const dropped = this.#ring[this.#start];
      this.#start++;
      if (dropped !== undefined) this.#floor = Math.max(this.#floor, dropped.rev);
      if (this.#start > this.capacity) {
        this.#ring.splice(0, this.#start);
        this.#start = 0;
      }
    }
    this.#ring.push(ev);
    for (const l of this.#listeners) l(ev);
  }

  /** Buffered events after `rev`, oldest first; throws when `rev` predates the history. */
  since(rev: number): SandboxEvent[] {
    if (rev < this.#floor) throw new ResourceVersionTooOldError(rev, this.#floor);
    const out: SandboxEvent[] = [];
    for (let i = this.#start; i < this.#ring.length; i++) {
      const ev = this.#ring[i];
      if (ev !== undefined && ev.rev > rev) out.push(ev);
    }
    return out;
  }

  subscribe(l: Listener): () => void {
    this.#listeners.add(l);
    return () => this.#listeners.delete(l);
  }

  get listenerCount(): number {
    return this.#listeners.size;
  }
}
