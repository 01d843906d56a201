import { spawn, type ChildProcess } from 'node:child_process';
import type { GuestOwner } from './guest-ids';
import { signalGroup, type ProcessGroups } from './process-groups';

/** The host variables a command inherits; everything else of the simulator's environment is cleared. */
const INHERITED = [
  'PATH',
  'TERM',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'ALL_PROXY',
  'http_proxy',
  'https_proxy',
  'no_proxy',
  'all_proxy',
];
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
/**
 * After the command exits, how long its output pipes may stay open when something it left
 * running in its process group (a server started in the background) holds them, before the
 * reply is sent without waiting for them.
 */
const PIPE_GRACE_MS = 250;
/**
 * The same bound when the group is empty: every byte written is still read to the end, and only
 * a process that left the group (a daemon that called setsid) can hold the pipes this long.
 */
const EMPTY_GROUP_PIPE_GRACE_MS = 10_000;

/** The command's environment: PATH, TERM and the proxy variables of the host, then the caller's `env`. */
export function guestEnv(extra: Readonly<Record<string, string>> | null | undefined): Record<string, string> {
  // no prototype: a caller's key such as `__proto__` is an ordinary variable name, never an accessor
  const env: Record<string, string> = Object.assign(Object.create(null) as Record<string, string>, {
    PATH: process.env.PATH ?? DEFAULT_PATH,
    TERM: process.env.TERM ?? 'xterm',
  });
  for (const k of INHERITED) {
    const v = process.env[k];
    if (v !== undefined) env[k] = v;
  }
  for (const [k, v] of Object.entries(extra ?? {})) env[k] = v;
  return env;
}

/** A variable name the kernel can carry: no `=`, no NUL, not empty. */
export function badEnvName(env: Readonly<Record<string, string>> | null | undefined): string | undefined {
  for (const [k, v] of Object.entries(env ?? {})) if (k === '' || k.includes('=') || k.includes('\0') || v.includes('\0')) return k;
  return undefined;
}

/** The command could not start: not found, not executable, or another spawn failure. */
export class SpawnError extends Error {
  override readonly name = 'SpawnError';
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export function isSpawnError(err: unknown): err is SpawnError {
  return err instanceof Error && err.name === 'SpawnError';
}

export interface SpawnSpec {
  sandboxId: string;
  argv: readonly string[];
  /** Host directory (inside the sandbox root). */
  cwd: string;
  env?: Readonly<Record<string, string>> | null | undefined;
  /** 'ignore' for a detached command, whose output nobody reads. */
  output: 'pipe' | 'ignore';
  /** 'pipe' for a command the caller writes to; absent: none. */
  stdin?: 'pipe' | 'ignore';
  /** Runs as this uid and gid (with no supplementary groups); absent = the simulator's user. */
  owner?: GuestOwner | undefined;
}

/**
 * Starts a real child process, without a shell, as the leader of its own process group (so the
 * group can be signalled as one), tracked under the sandbox. Resolves once it runs; a command that
 * cannot start rejects with SpawnError.
 */
export function spawnGuest(groups: ProcessGroups, spec: SpawnSpec): Promise<ChildProcess> {
  const [command, ...args] = spec.argv;
  if (command === undefined || command === '') return Promise.reject(new SpawnError('EINVAL', 'empty argv'));
  if (spec.argv.some((a) => a.includes('\0'))) return Promise.reject(new SpawnError('EINVAL', 'argv contains NUL'));
  const child = spawn(command, args, {
    cwd: spec.cwd,
    env: guestEnv(spec.env),
    detached: true,
    stdio: [spec.stdin ?? 'ignore', spec.output, spec.output],
    windowsHide: true,
    ...(spec.owner !== undefined ? { uid: spec.owner.uid, gid: spec.owner.gid } : {}),
  });
  return new Promise<ChildProcess>((resolve, reject) => {
    child.once('error', (err: NodeJS.ErrnoException) => reject(spawnFailure(command, err)));
    child.once('spawn', () => {
      child.removeAllListeners('error');
      // a later error (a signal to a dead process) is not the caller's business
      child.on('error', () => undefined);
      groups.track(spec.sandboxId, child);
      resolve(child);
    });
  });
}

function spawnFailure(command: string, err: NodeJS.ErrnoException): SpawnError {
  const code = err.code ?? 'EUNKNOWN';
  if (code === 'ENOENT') return new SpawnError(code, `command not found: ${command}`);
  if (code === 'EACCES' || code === 'EPERM') return new SpawnError(code, `command not executable: ${command}`);
  return new SpawnError(code, `cannot start ${command}: ${err.message}`);
}

/** Memory for buffered output across every exec in flight on the node. */
export class ExecMemory {
  #used = 0;
  constructor(readonly limitBytes: number) {}

  get usedBytes(): number {
    return this.#used;
  }

  reserve(n: number): boolean {
    if (this.#used + n > this.limitBytes) return false;
    this.#used += n;
    return true;
  }

  release(n: number): void {
    this.#used -= n;
  }
}

export type BufferedEnd = 'exit' | 'timeout' | 'cap' | 'memory' | 'hangup';

export interface BufferedOutcome {
  end: BufferedEnd;
  /** The exit code; -1 when killed by a signal (or by the node). */
  exitCode: number;
  stdout: Buffer;
  stderr: Buffer;
}

export interface BufferedLimits {
  /** 0 = none. */
  timeoutMs: number;
  /** stdout + stderr. */
  capBytes: number;
  memory: ExecMemory;
  /** Aborted when the caller hung up. */
  signal?: AbortSignal | undefined;
}

/**
 * Collects a running command's output to its end. On timeout, the output cap, the node's exec
 * memory running out, or the caller hanging up, the whole group is killed and the reply waits
 * for the leader to exit, so nothing keeps running.
 */
export function collectOutput(child: ChildProcess, limits: BufferedLimits): Promise<BufferedOutcome> {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  let total = 0;
  let end: BufferedEnd = 'exit';
  const pid = child.pid ?? 0;
  const stop = (why: BufferedEnd): void => {
    if (end !== 'exit') return;
    end = why;
    signalGroup(pid, 'SIGCONT');
    signalGroup(pid, 'SIGKILL');
    // output nobody will read goes back to the node at once (a timeout keeps what came, for the guest runtime's reply)
    if (why !== 'timeout') {
      limits.memory.release(total);
      total = 0;
      out.length = 0;
      err.length = 0;
    }
  };
  const take = (into: Buffer[]) => (chunk: Buffer) => {
    if (end !== 'exit') return;
    if (total + chunk.length > limits.capBytes) return stop('cap');
    if (!limits.memory.reserve(chunk.length)) return stop('memory');
    total += chunk.length;
    into.push(chunk);
  };
  child.stdout?.on('data', take(out));
  child.stderr?.on('data', take(err));
  const timer = limits.timeoutMs > 0 ? setTimeout(() => stop('timeout'), limits.timeoutMs) : undefined;
  const onAbort = (): void => stop('hangup');
  limits.signal?.addEventListener('abort', onAbort, { once: true });
  if (limits.signal?.aborted) onAbort();
  return exited(child).then((exitCode) => {
    clearTimeout(timer);
    limits.signal?.removeEventListener('abort', onAbort);
    limits.memory.release(total);
    return { end, exitCode, stdout: Buffer.concat(out), stderr: Buffer.concat(err) };
  });
}

/**
 * The exit code (-1 for a signal) once the command exited and its output pipes closed, or the
 * grace period after its exit passed (the pipes are then destroyed).
 */
export function exited(child: ChildProcess): Promise<number> {
  return new Promise<number>((resolve) => {
    const onExit = (code: number | null): void => {
      const groupLives = child.pid !== undefined && signalGroup(child.pid, 0);
      const graceMs = groupLives ? PIPE_GRACE_MS : EMPTY_GROUP_PIPE_GRACE_MS;
      afterPipes(child, graceMs, () => resolve(code ?? -1));
    };
    if (child.exitCode !== null || child.signalCode !== null) onExit(child.exitCode);
    else child.once('exit', onExit);
  });
}

/** Calls `done` once both output pipes closed, or after the grace period (they are then destroyed). */
function afterPipes(child: ChildProcess, graceMs: number, done: () => void): void {
  const pipes = [child.stdout, child.stderr].filter((p) => p !== null && !p.closed);
  if (pipes.length === 0) return done();
  let open = pipes.length;
  let called = false;
  const once = (): void => {
    if (called) return;
    called = true;
    clearTimeout(grace);
    done();
  };
  const grace = setTimeout(() => {
    for (const p of pipes) p?.destroy();
    once();
  }, graceMs);
  for (const p of pipes)
    p?.once('close', () => {
      if (--open === 0) once();
    });
}
