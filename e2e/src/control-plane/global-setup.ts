import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startControlPlane, type ControlPlane } from './control-plane';

export const KUBECONFIG_ENV = 'SANDBOX_SCALE_TEST_KUBECONFIG';
export const BIN_DIR_ENV = 'SANDBOX_SCALE_TEST_BIN_DIR';
export const FILES_ENV = 'SANDBOX_SCALE_TEST_CP_FILES';

declare global {
  var __sandboxScaleControlPlane: ControlPlane | undefined;
}

/**
 * One control plane for the whole jest run, shared with test workers through env. When
 * SANDBOX_SCALE_TEST_KUBECONFIG is already set (a control plane from `npm run cluster`),
 * that one is used instead and left running.
 */
export default async function globalSetup(): Promise<void> {
  if (process.env[KUBECONFIG_ENV]) return;
  const cp = await startControlPlane({ log: (m) => process.stderr.write(`[control-plane] ${m}\n`) });
  globalThis.__sandboxScaleControlPlane = cp;
  process.env[KUBECONFIG_ENV] = cp.kubeconfigPath;
  process.env[BIN_DIR_ENV] = cp.binDir;
  const filesPath = join(cp.dir, 'files.json');
  writeFileSync(filesPath, JSON.stringify({ ...cp.files, server: cp.server, dir: cp.dir }));
  process.env[FILES_ENV] = filesPath;
  process.stderr.write(`[control-plane] ready in ${cp.startupMs} ms at ${cp.server}\n`);
}
