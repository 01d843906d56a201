import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../control-plane/ports';
import { eventually } from '../testing/eventually';

/** An OCI registry on this machine: go-containerregistry's `registry`, plain HTTP on loopback, in memory. */
export interface LocalRegistry {
  /** 127.0.0.1:<port>, as image references and `oci://` name it. */
  host: string;
  stop(): Promise<void>;
}

export class RegistryStartError extends Error {
  override readonly name = 'RegistryStartError';
}
export const isRegistryStartError = (e: unknown): e is RegistryStartError => e instanceof RegistryStartError;

/** Starts `registry` from npm run tools' directory; resolves once it answers the distribution API's /v2/. */
export async function startLocalRegistry(binDir: string, logDir: string): Promise<LocalRegistry> {
  const port = await freePort();
  const host = `127.0.0.1:${port}`;
  const log = createWriteStream(join(logDir, 'registry.log'));
  const child = spawn(join(binDir, 'registry'), ['-port', String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.pipe(log);
  child.stderr.pipe(log);
  // never outlive the run that started it
  const kill = (): void => {
    child.kill('SIGKILL');
  };
  process.once('exit', kill);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    await eventually(
      async () => {
        if (child.exitCode !== null)
          throw new RegistryStartError(`registry exited with ${child.exitCode} (log: ${join(logDir, 'registry.log')})`);
        const res = await fetch(`http://${host}/v2/`);
        if (res.status !== 200) throw new RegistryStartError(`registry answered /v2/ with ${res.status}`);
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
  } catch (err) {
    kill();
    throw err;
  }
  return {
    host,
    async stop() {
      process.removeListener('exit', kill);
      child.kill('SIGTERM');
      await exited;
    },
  };
}
