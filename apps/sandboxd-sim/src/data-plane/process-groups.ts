import type { ChildProcess } from 'node:child_process';

/**
 * The process groups each sandbox started (every command is the leader of its own group, so a
 * signal to the group reaches whatever the command forked). A group is kept after its leader
 * exits while members remain (a server started in the background), and dropped once a signal
 * finds it empty.
 */
export class ProcessGroups {
  readonly #bySandbox = new Map<string, Set<number>>();
  readonly #stopped = new Set<string>();

  /** Records a spawned leader; a sandbox that is stopped (hibernated) stops it at once. */
  track(sandboxId: string, child: ChildProcess): void {
    const pid = child.pid;
    if (pid === undefined) return;
    let set = this.#bySandbox.get(sandboxId);
    if (set === undefined) {
      set = new Set();
      this.#bySandbox.set(sandboxId, set);
    }
    set.add(pid);
    if (this.#stopped.has(sandboxId)) signalGroup(pid, 'SIGSTOP');
    child.once('exit', () => {
      // members left behind keep the group alive; an empty one is forgotten now
      if (!signalGroup(pid, 0)) this.#forget(sandboxId, pid);
    });
  }

  pids(sandboxId: string): number[] {
    return [...(this.#bySandbox.get(sandboxId) ?? [])];
  }

  /** SIGKILL to every group of the sandbox; it is forgotten. */
  killAll(sandboxId: string): void {
    for (const pid of this.pids(sandboxId)) {
      signalGroup(pid, 'SIGCONT');
      signalGroup(pid, 'SIGKILL');
    }
    this.#bySandbox.delete(sandboxId);
    this.#stopped.delete(sandboxId);
  }

  /** Hibernate: SIGSTOP to every group, and to each started while stopped. */
  stopAll(sandboxId: string): void {
    this.#stopped.add(sandboxId);
    this.#signalAll(sandboxId, 'SIGSTOP');
  }

  /** Wake: SIGCONT to every group. */
  continueAll(sandboxId: string): void {
    if (!this.#stopped.delete(sandboxId)) return;
    this.#signalAll(sandboxId, 'SIGCONT');
  }

  /** Every sandbox's groups killed (the node stops). */
  killEverything(): void {
    for (const id of [...this.#bySandbox.keys()]) this.killAll(id);
  }

  #signalAll(sandboxId: string, signal: NodeJS.Signals): void {
    for (const pid of this.pids(sandboxId)) if (!signalGroup(pid, signal)) this.#forget(sandboxId, pid);
  }

  #forget(sandboxId: string, pid: number): void {
    const set = this.#bySandbox.get(sandboxId);
    set?.delete(pid);
    if (set?.size === 0) this.#bySandbox.delete(sandboxId);
  }
}

/** Signals the group led by `pid`; false when the group no longer exists. */
export function signalGroup(pid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false;
  }
}
