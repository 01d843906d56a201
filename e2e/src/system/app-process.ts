import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';

export const REPO_ROOT = resolve(__dirname, '../../..');

const TAIL_LINES = 20;

export interface AppProcessOptions {
  name: string;
  /** Entry point relative to the repository root, e.g. apps/claim-controller/src/main.ts. */
  entry: string;
  args: string[];
  logPath: string;
  env?: Record<string, string>;
  /** Called with each stdout line (the sim prints its node table there). */
  onStdoutLine?: (line: string) => void;
}

/**
 * One app run as its own Node process (`node --import tsx <entry>`), as it runs in a pod: its own
 * flags, credentials and lifecycle. Output goes to a log file; stop() sends SIGTERM so the app
 * shuts down gracefully, then SIGKILL after a grace period.
 */
export class AppProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  readonly closed: Promise<void>;
  private readonly log: WriteStream;
  private readonly lastLines: string[] = [];

  constructor(readonly opts: AppProcessOptions) {
    this.log = createWriteStream(opts.logPath, { flags: 'a' });
    // node --import tsx, not the tsx wrapper binary: a signal to the wrapper would orphan the app.
    this.child = spawn(process.execPath, ['--import', 'tsx', resolve(REPO_ROOT, opts.entry), ...opts.args], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out = createInterface({ input: this.child.stdout! });
    out.on('line', (line) => {
      this.record(line);
      opts.onStdoutLine?.(line);
    });
    createInterface({ input: this.child.stderr! }).on('line', (line) => this.record(line));
    // never outlive the runner, even when it exits without calling stop()
    const onExit = (): void => this.kill('SIGKILL');
    process.once('exit', onExit);
    this.exited = new Promise((res) =>
      this.child.once('exit', (code) => {
        process.removeListener('exit', onExit);
        res(code);
      }),
    );
    // 'close' follows 'exit' once the output pipes are drained: the tail is complete by then
    this.closed = new Promise((res) => this.child.once('close', () => res()));
  }

  private record(line: string): void {
    this.log.write(`${line}\n`);
    // one JSON log line can carry a whole stack; the tail is for a CI log, the file keeps it all
    this.lastLines.push(line.length > 2_000 ? `${line.slice(0, 2_000)}…` : line);
    if (this.lastLines.length > TAIL_LINES) this.lastLines.shift();
  }

  /** The last lines the process wrote (stdout and stderr). */
  tail(): string {
    return this.lastLines.join('\n');
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  kill(signal: NodeJS.Signals): void {
    if (this.running) this.child.kill(signal);
  }

  async stop(graceMs = 10_000): Promise<void> {
    if (this.running) {
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.kill('SIGKILL'), graceMs);
      await this.exited;
      clearTimeout(timer);
    }
    await new Promise<void>((res) => this.log.end(res));
  }
}

export interface SupervisedAppOptions extends AppProcessOptions {
  /** First wait before a restart; doubles per consecutive quick exit up to maxBackoffMs, as the kubelet's CrashLoopBackOff. */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** 'Never' for a process whose restart would not be the same process (the simulated nodes listen on fresh ports). */
  restartPolicy?: 'Always' | 'Never';
  /** Told of each exit nobody asked for (the runner prints it, so a CI log names the app that died). */
  onUnexpectedExit?: (exit: { name: string; code: number | null; restarts: number; tail: string }) => void;
}

/**
 * An app kept running as a Deployment's pod is (restartPolicy: Always): an exit nobody asked for
 * (a lost leader Lease, a crash) starts the process again after a back-off, and is counted, so a
 * test can both ride through it as a cluster would and assert that it did not happen.
 */
export class SupervisedApp {
  private current: AppProcess;
  private stopping = false;
  private restartTimer: NodeJS.Timeout | undefined;
  private nextBackoffMs: number;
  /** Exits nobody asked for, with their codes (null when ended by a signal). */
  readonly unexpectedExits: Array<number | null> = [];

  constructor(readonly opts: SupervisedAppOptions) {
    this.nextBackoffMs = opts.backoffMs ?? 1_000;
    this.current = this.spawn();
  }

  private spawn(): AppProcess {
    const p = new AppProcess(this.opts);
    const startedAt = Date.now();
    void p.closed.then(async () => {
      const code = await p.exited;
      if (this.stopping || p !== this.current) return;
      this.unexpectedExits.push(code);
      this.opts.onUnexpectedExit?.({ name: this.opts.name, code, restarts: this.unexpectedExits.length, tail: p.tail() });
      if (this.opts.restartPolicy === 'Never') return;
      // a process that ran a while starts over from the first back-off, as the kubelet resets it
      if (Date.now() - startedAt > 60_000) this.nextBackoffMs = this.opts.backoffMs ?? 1_000;
      const wait = this.nextBackoffMs;
      this.nextBackoffMs = Math.min(wait * 2, this.opts.maxBackoffMs ?? 10_000);
      this.restartTimer = setTimeout(() => {
        this.restartTimer = undefined;
        if (!this.stopping) this.current = this.spawn();
      }, wait);
      this.restartTimer.unref();
    });
    return p;
  }

  get pid(): number | undefined {
    return this.current.pid;
  }

  /** Resolves with the exit code of the process now running. */
  get exited(): Promise<number | null> {
    return this.current.exited;
  }

  /** The process now running (undefined between an unexpected exit and its restart). */
  get running(): boolean {
    return this.current.running;
  }

  /** Number of exits nobody asked for. */
  get restarts(): number {
    return this.unexpectedExits.length;
  }

  /** Sends a signal to the process now running; an exit it causes is restarted like any other. */
  kill(signal: NodeJS.Signals): void {
    this.current.kill(signal);
  }

  /** Stops for good: no restart follows. `kill` ends the process with SIGKILL instead of SIGTERM. */
  async stop(opts: { kill?: boolean; graceMs?: number } = {}): Promise<void> {
    this.stopping = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    if (opts.kill) this.current.kill('SIGKILL');
    await this.current.stop(opts.graceMs);
  }
}
