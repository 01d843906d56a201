import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * Copies the admin kubeconfig to a path that does not change between runs
 * (~/.cache/sandbox-scale/kubeconfig), so an `export KUBECONFIG=` line stays valid in shells
 * opened earlier; it is removed again on stop.
 */
export function stableKubeconfigPath(source: string): string {
  const dir = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'sandbox-scale');
  mkdirSync(dir, { recursive: true });
  const dest = join(dir, 'kubeconfig');
  copyFileSync(source, dest);
  process.once('exit', () => rmSync(dest, { force: true }));
  return dest;
}

/**
 * Resolves on the first SIGINT or SIGTERM. Later ones are ignored rather than left to Node's
 * default (which ends the process at once, before it has stopped its children): one Ctrl-C
 * reaches this process twice, from the terminal to the whole process group and relayed by tsx.
 * Every app's stop is bounded (SIGKILL after its grace), so ignoring them never hangs the stop.
 */
export function waitForSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    let first: NodeJS.Signals | undefined;
    const on = (sig: NodeJS.Signals): void => {
      if (first !== undefined) {
        process.stderr.write(`[start] ${sig} again: still stopping\n`);
        return;
      }
      first = sig;
      resolve(sig);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
  });
}
