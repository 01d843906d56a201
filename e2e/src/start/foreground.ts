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

/** Resolves on the first SIGINT or SIGTERM. */
export function waitForSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const on = (sig: NodeJS.Signals): void => {
      process.removeListener('SIGINT', on);
      process.removeListener('SIGTERM', on);
      resolve(sig);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
  });
}
