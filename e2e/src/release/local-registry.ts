import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../control-plane/ports';
import { ProcessGroup } from '../control-plane/process-group';
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

/**
 * Starts `registry` from npm run tools' directory in a process group of its own (its watchdog
 * ends it with the run, its log is kept with SANDBOX_SCALE_KEEP_LOGS); resolves once it answers
 * the distribution API's /v2/.
 */
export async function startLocalRegistry(binDir: string): Promise<LocalRegistry> {
  const group = new ProcessGroup(mkdtempSync(join(tmpdir(), 'sandbox-scale-registry-')));
  const port = await freePort();
  const host = `127.0.0.1:${port}`;
  let exited: string | undefined;
  group.start('registry', join(binDir, 'registry'), ['-port', String(port)], (code, logPath) => {
    exited = `registry exited with ${code} (log: ${logPath})`;
  });
  try {
    await eventually(
      async () => {
        if (exited !== undefined) throw new RegistryStartError(exited);
        const res = await fetch(`http://${host}/v2/`);
        if (res.status !== 200) throw new RegistryStartError(`registry answered /v2/ with ${res.status}`);
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
  } catch (err) {
    await group.stop();
    throw err;
  }
  return { host, stop: () => group.stop() };
}
