import { randomUUID } from 'node:crypto';
import type { GuestChild, StartSpec, WatchEventType } from './guest';

/** Output a subscriber has not read yet, past which the command's pipes are paused (as a full pipe would). */
const HIGH_WATER_BYTES = 4 << 20;
const LOW_WATER_BYTES = 1 << 20;
/** How long a command's pipes may stay open after it exits, held by something it left running. */
const PIPE_GRACE_MS = 250;
/** Commands at once per sandbox, and watchers per sandbox (each an inotify set on the node). */
export const MAX_PROCESSES = 256;
export const MAX_WATCHERS = 64;
/** Events a watcher holds unread (a polled one between two polls); past it events are lost. */
export const MAX_WATCHER_EVENTS = 10_000;

export type ProcessOutput =
  { kind: 'stdout' | 'stderr'; data: Buffer } | { kind: 'end'; exitCode: number; exited: boolean; status: string };

/** One reader of a command's output: a queue with a waiter, bounded by the command's pause. */
export class OutputReader {
  readonly #queue: ProcessOutput[] = [];
  #bytes = 0;
  #wake: (() => void) | undefined;
  #closed = false;

  constructor(private readonly onDrain: () => void) {}

  get pendingBytes(): number {
    return this.#bytes;
  }

  push(o: ProcessOutput): void {
    if (this.#closed) return;
    this.#queue.push(o);
    if (o.kind !== 'end') this.#bytes += o.data.length;
    this.#wake?.();
  }

  close(): void {
    this.#closed = true;
    this.#wake?.();
  }

  /** The next output, or undefined once closed and empty; `timeoutMs` elapsing answers 'idle'. */
  async next(timeoutMs: number | undefined, signal: AbortSignal): Promise<ProcessOutput | 'idle' | undefined> {
    for (;;) {
      const o = this.#queue.shift();
      if (o !== undefined) {
        if (o.kind !== 'end') {
          this.#bytes -= o.data.length;
          if (this.#bytes < LOW_WATER_BYTES) this.onDrain();
        }
        return o;
      }
      if (this.#closed || signal.aborted) return undefined;
      const woke = await new Promise<boolean>((resolve) => {
        const timer = timeoutMs !== undefined ? setTimeout(() => resolve(false), timeoutMs) : undefined;
        const done = (): void => {
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          this.#wake = undefined;
          resolve(true);
        };
        this.#wake = done;
        signal.addEventListener('abort', done, { once: true });
      });
      if (!woke) return 'idle';
    }
  }
}

/** A command envd started, its readers (Start's stream, and each Connect), until it ends. */
export class EnvdProcess {
  readonly #readers = new Set<OutputReader>();
  #paused = false;
  #ended: ProcessOutput | undefined;

  constructor(
    readonly child: GuestChild,
    readonly spec: StartSpec,
    readonly tag: string | undefined,
    onEnd: () => void,
  ) {
    const feed = (kind: 'stdout' | 'stderr') => (data: Buffer) => {
      for (const r of this.#readers) r.push({ kind, data });
      this.#pauseIfBehind();
    };
    child.stdout.on('data', feed('stdout'));
    child.stderr.on('data', feed('stderr'));
    // a reader that hung up must not fail the command
    child.stdin?.on('error', () => undefined);
    void this.#finish(onEnd);
  }

  get pid(): number {
    return this.child.pid;
  }

  /** A reader from now on; undefined once the command ended. */
  read(): OutputReader | undefined {
    if (this.#ended !== undefined) return undefined;
    const r = new OutputReader(() => this.#resumeIfCaughtUp());
    this.#readers.add(r);
    return r;
  }

  unread(r: OutputReader): void {
    this.#readers.delete(r);
    r.close();
    this.#resumeIfCaughtUp();
  }

  #pauseIfBehind(): void {
    if (this.#paused) return;
    for (const r of this.#readers)
      if (r.pendingBytes > HIGH_WATER_BYTES) {
        this.#paused = true;
        this.child.stdout.pause();
        this.child.stderr.pause();
        return;
      }
  }

  #resumeIfCaughtUp(): void {
    if (!this.#paused) return;
    for (const r of this.#readers) if (r.pendingBytes >= LOW_WATER_BYTES) return;
    this.#paused = false;
    this.child.stdout.resume();
    this.child.stderr.resume();
  }

  async #finish(onEnd: () => void): Promise<void> {
    const drained = (s: NodeJS.ReadableStream & { readableEnded?: boolean; destroyed?: boolean }): Promise<void> =>
      s.readableEnded === true || s.destroyed === true ? Promise.resolve() : new Promise((resolve) => s.once('close', resolve));
    const { code, signal } = await this.child.exited;
    const pipes = Promise.all([drained(this.child.stdout), drained(this.child.stderr)]);
    let grace: NodeJS.Timeout | undefined;
    await Promise.race([pipes, new Promise<void>((resolve) => (grace = setTimeout(resolve, PIPE_GRACE_MS)))]);
    clearTimeout(grace);
    this.child.stdout.destroy();
    this.child.stderr.destroy();
    this.child.stdin?.destroy();
    const end = endOf(code, signal);
    this.#ended = end;
    for (const r of this.#readers) {
      r.push(end);
      r.close();
    }
    this.#readers.clear();
    onEnd();
  }
}

/** A command's end as envd reports it: the exit status, or the signal as Go's os.ProcessState words it. */
export function endOf(code: number | null, signal: string | null): ProcessOutput & { kind: 'end' } {
  return code !== null
    ? { kind: 'end', exitCode: code, exited: true, status: `exit status ${code}` }
    : { kind: 'end', exitCode: -1, exited: false, status: `signal: ${signalWord(signal)}` };
}

/** How Go's os.ProcessState words a signal, which is what envd reports. */
function signalWord(signal: string | null): string {
  if (signal === 'SIGKILL') return 'killed';
  if (signal === 'SIGTERM') return 'terminated';
  if (signal === 'SIGINT') return 'interrupt';
  return signal ?? 'unknown';
}

/** A watcher polled by GetWatcherEvents (Python's synchronous watch_dir). */
export interface PolledWatcher {
  readonly events: { name: string; type: WatchEventType }[];
  stop: () => void;
}

/** What envd keeps for one sandbox: its running commands by pid, and its polled watchers. */
export class EnvdState {
  readonly processes = new Map<number, EnvdProcess>();
  readonly #watchers = new Map<string, PolledWatcher>();

  add(child: GuestChild, spec: StartSpec, tag: string | undefined): EnvdProcess {
    const p = new EnvdProcess(child, spec, tag, () => {
      if (this.processes.get(child.pid) === p) this.processes.delete(child.pid);
    });
    this.processes.set(child.pid, p);
    return p;
  }

  find(selector: { pid?: number; tag?: string }): EnvdProcess | undefined {
    if (selector.pid !== undefined) return this.processes.get(selector.pid);
    if (selector.tag !== undefined) for (const p of this.processes.values()) if (p.tag === selector.tag) return p;
    return undefined;
  }

  get watcherCount(): number {
    return this.#watchers.size;
  }

  addWatcher(stop: (events: PolledWatcher['events']) => () => void): string {
    const id = randomUUID();
    const events: PolledWatcher['events'] = [];
    this.#watchers.set(id, { events, stop: stop(events) });
    return id;
  }

  /** The events since the last poll; undefined: no such watcher. */
  drainWatcher(id: string): PolledWatcher['events'] | undefined {
    const w = this.#watchers.get(id);
    if (w === undefined) return undefined;
    return w.events.splice(0, w.events.length);
  }

  removeWatcher(id: string): boolean {
    const w = this.#watchers.get(id);
    if (w === undefined) return false;
    w.stop();
    this.#watchers.delete(id);
    return true;
  }

  /** The sandbox is gone: watchers stopped (its processes are the host's to kill). */
  close(): void {
    for (const w of this.#watchers.values()) w.stop();
    this.#watchers.clear();
  }
}

/** Appends to a polled watcher's events, dropping the oldest past the bound. */
export function keepEvent(events: PolledWatcher['events'], e: PolledWatcher['events'][number]): void {
  events.push(e);
  if (events.length > MAX_WATCHER_EVENTS) events.splice(0, events.length - MAX_WATCHER_EVENTS);
}
