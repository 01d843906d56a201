import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';

export const REPO_ROOT = resolve(__dirname, '../../..');

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
  private readonly log: WriteStream;

  constructor(readonly opts: AppProcessOptions) {
    this.log = createWriteStream(opts.logPath, { flags: 'a' });
    // node --import tsx, not the tsx wrapper binary: a signal to the wrapper would orphan the app.
    this.child = spawn(process.execPath, ['--import', 'tsx', resolve(REPO_ROOT, opts.entry), ...opts.args], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stderr?.pipe(this.log, { end: false });
    const out = createInterface({ input: this.child.stdout! });
    out.on('line', (line) => {
      this.log.write(`${line}\n`);
      opts.onStdoutLine?.(line);
    });
    // never outlive the runner, even when it exits without calling stop()
    const onExit = (): void => this.kill('SIGKILL');
    process.once('exit', onExit);
    this.exited = new Promise((res) => this.child.once('exit', (code) => {
      process.removeListener('exit', onExit);
      res(code);
    }));
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
