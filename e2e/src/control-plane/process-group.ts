import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, cpSync, createWriteStream, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The child processes of one control plane. Every pid is recorded in a file a detached watchdog
 * reads, so nothing outlives its owner even when the owner is killed; stop() terminates in
 * reverse start order and waits for each exit.
 */
export class ProcessGroup {
  private readonly procs: { name: string; child: ChildProcess; exited: Promise<void>; stopping: boolean }[] = [];
  private readonly pidFile: string;
  private exitHook: (() => void) | undefined;
  private readonly removeHooks: (() => void)[] = [];

  constructor(private readonly dir: string) {
    this.pidFile = join(dir, 'pids');
    const watchdog = spawn(process.execPath, [join(__dirname, 'watchdog.cjs'), String(process.pid), dir, this.pidFile], {
      detached: true,
      stdio: 'ignore',
    });
    watchdog.unref();
    this.exitHook = () => this.killAllSync();
    process.once('exit', this.exitHook);
  }

  /** Runs `hook` (synchronous) after every process has exited and before the dir is removed. */
  beforeRemove(hook: () => void): void {
    this.removeHooks.push(hook);
  }

  private runRemoveHooks(): void {
    for (const hook of this.removeHooks.splice(0)) hook();
    // SANDBOX_SCALE_KEEP_LOGS=<dir>: the components' logs outlive the run (CI artifacts, a failed start)
    const keep = process.env.SANDBOX_SCALE_KEEP_LOGS;
    if (keep) {
      const to = join(keep, this.dir.split('/').pop() as string);
      mkdirSync(to, { recursive: true });
      for (const f of readdirSync(this.dir).filter((n) => n.endsWith('.log'))) cpSync(join(this.dir, f), join(to, f));
    }
  }

  /** Starts `bin` with its output in `<dir>/<name>.log`; `onEarlyExit` fires if it dies before stop(). */
  start(name: string, bin: string, args: string[], onEarlyExit: (code: number | null, logPath: string) => void): ChildProcess {
    const logPath = join(this.dir, `${name}.log`);
    const log = createWriteStream(logPath);
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout?.pipe(log);
    child.stderr?.pipe(log);
    if (child.pid) appendFileSync(this.pidFile, `${child.pid}\n`);
    const entry = { name, child, exited: Promise.resolve(), stopping: false };
    entry.exited = new Promise<void>((resolve) => {
      child.once('exit', (code) => {
        if (!entry.stopping) onEarlyExit(code, logPath);
        resolve();
      });
    });
    this.procs.push(entry);
    return child;
  }

  async stop(timeoutMs = 10_000): Promise<void> {
    for (const p of [...this.procs].reverse()) {
      p.stopping = true;
      if (p.child.exitCode === null && p.child.signalCode === null) {
        p.child.kill('SIGTERM');
        const timer = setTimeout(() => p.child.kill('SIGKILL'), timeoutMs);
        await p.exited;
        clearTimeout(timer);
      }
    }
    this.procs.length = 0;
    if (this.exitHook) process.removeListener('exit', this.exitHook);
    this.runRemoveHooks();
    rmSync(this.dir, { recursive: true, force: true });
  }

  private killAllSync(): void {
    for (const p of this.procs) {
      try {
        p.child.kill('SIGKILL');
      } catch {
        /* already gone */
      }
    }
    this.runRemoveHooks();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
