import type { Socket } from 'node:net';
import type { Logger } from '@sandbox-scale/kube-runtime';
import { ExecMemory } from './exec-runner';
import type { GuestUidRange } from './guest-ids';
import { ProcessGroups } from './process-groups';
import { SandboxRoots } from './sandbox-root';

/** Buffered exec output across every exec in flight on one node; past it an exec is killed (503). */
export const NODE_EXEC_MEMORY_BYTES = 64 << 20;

export interface DataPlaneOptions {
  /** This node's own directory under the data directory. */
  nodeDir: string;
  logger: Logger;
  /** Each sandbox's commands run as a uid of this range, and its files belong to it; absent = the simulator's own user. */
  guestUids?: GuestUidRange | undefined;
}

/**
 * One node's data plane: the sandboxes' root directories, the process groups their commands run
 * in, the exec memory budget, and the connections (agent and port relays) open to each
 * sandbox. Lifecycle verbs call in here, so files and processes follow release, fork, checkpoint,
 * hibernate and wake.
 */
export class DataPlane {
  readonly roots: SandboxRoots;
  readonly groups = new ProcessGroups();
  readonly memory = new ExecMemory(NODE_EXEC_MEMORY_BYTES);
  readonly logger: Logger;
  /** Agent connections, port relays and execs in flight, by sandbox id: each holds the idle clock. */
  readonly #holds = new Map<string, number>();
  readonly #sockets = new Map<string, Set<Socket>>();
  readonly #removals = new Map<string, Promise<void>>();
  readonly #discarded: ((sandboxId: string) => void)[] = [];

  constructor(opts: DataPlaneOptions) {
    this.roots = new SandboxRoots(opts.nodeDir, opts.guestUids);
    this.logger = opts.logger;
  }

  init(): Promise<void> {
    return this.roots.init();
  }

  /** Marks the sandbox busy until the returned function is called (idempotent). */
  hold(sandboxId: string): () => void {
    this.#holds.set(sandboxId, (this.#holds.get(sandboxId) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const n = (this.#holds.get(sandboxId) ?? 1) - 1;
      if (n <= 0) this.#holds.delete(sandboxId);
      else this.#holds.set(sandboxId, n);
    };
  }

  isHeld(sandboxId: string): boolean {
    return this.#holds.has(sandboxId);
  }

  /** A connection open to the sandbox: destroyed when the sandbox goes, and holding its idle clock meanwhile. */
  attach(sandboxId: string, socket: Socket): void {
    let set = this.#sockets.get(sandboxId);
    if (set === undefined) {
      set = new Set();
      this.#sockets.set(sandboxId, set);
    }
    set.add(socket);
    const release = this.hold(sandboxId);
    socket.once('close', () => {
      release();
      const s = this.#sockets.get(sandboxId);
      s?.delete(socket);
      if (s?.size === 0) this.#sockets.delete(sandboxId);
    });
  }

  /** Every open data-plane connection of the node (for partition faults). */
  *openSockets(): Iterable<Socket> {
    for (const set of this.#sockets.values()) yield* set;
  }

  /** Called with each sandbox discarded, so what a runtime keeps for it goes too. */
  onDiscard(fn: (sandboxId: string) => void): void {
    this.#discarded.push(fn);
  }

  /** The sandbox is gone (release, reap, archive purge): its processes killed, connections closed, root removed. */
  discard(sandboxId: string): void {
    this.groups.killAll(sandboxId);
    for (const fn of this.#discarded) fn(sandboxId);
    for (const s of this.#sockets.get(sandboxId) ?? []) s.destroy();
    this.#sockets.delete(sandboxId);
    if (!this.roots.has(sandboxId)) return;
    const removal = this.roots
      .removeRoot(sandboxId)
      .catch((err: unknown) => this.logger.warn({ err, sandboxId }, 'sandbox root removal failed'));
    this.#removals.set(sandboxId, removal);
    void removal.finally(() => this.#removals.delete(sandboxId));
  }

  /** Resolves once a discarded sandbox's root is gone from disk. */
  async removed(sandboxId: string): Promise<void> {
    await this.#removals.get(sandboxId);
  }

  freeze(sandboxId: string): void {
    this.groups.stopAll(sandboxId);
  }

  thaw(sandboxId: string): void {
    this.groups.continueAll(sandboxId);
  }

  /** The node stops: everything killed and closed, and its directory removed. */
  async stop(): Promise<void> {
    this.groups.killEverything();
    for (const set of this.#sockets.values()) for (const s of set) s.destroy();
    this.#sockets.clear();
    await Promise.all(this.#removals.values());
    await this.roots.removeAll();
  }
}
