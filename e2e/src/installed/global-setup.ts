import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { auditArgs } from '../control-plane/audit';
import { chartServiceAccountUsers } from '../testing/audit-log';
import { BIN_DIR_ENV, FILES_ENV, KUBECONFIG_ENV } from '../control-plane/global-setup';
import { TARGET_ENV } from '../system/system-under-test';
import { INSTALLED_NAMESPACE, INSTALLED_RELEASE, startInstalledSystem, type InstalledSystem } from './installed-system';
import { publishInstalledState } from './installed-target';
import { installedSuiteHelmArgs, NODE_NAMESPACE } from './installed-values';

declare global {
  var __sandboxScaleInstalled: { system: InstalledSystem; readyAt: number; setupMs: number } | undefined;
}

const log = (m: string): void => void process.stderr.write(`[installed] ${m}\n`);

/**
 * The installed run: one control plane with a real node, the images built and loaded, the chart
 * installed once by helm; every suite of the run connects to it (SANDBOX_SCALE_E2E_TARGET=installed).
 */
export default async function globalSetup(): Promise<void> {
  const started = Date.now();
  process.env[TARGET_ENV] = 'installed';
  const auditDir = join('/tmp', `sandbox-scale-installed-audit-${process.pid}`);
  mkdirSync(auditDir, { recursive: true, mode: 0o700 });
  // SubjectAccessReviews with their bodies, and every request of the chart's ServiceAccounts (rbac-audit)
  const audit = auditArgs(auditDir, {
    subjectAccessReviews: true,
    users: [...chartServiceAccountUsers(INSTALLED_NAMESPACE, INSTALLED_RELEASE, NODE_NAMESPACE).values()],
  });
  const system = await startInstalledSystem({ log, helmArgs: installedSuiteHelmArgs(), apiserverArgs: audit.args });
  const cp = system.cp;
  process.env[KUBECONFIG_ENV] = cp.kubeconfigPath;
  process.env[BIN_DIR_ENV] = cp.binDir;
  const filesPath = join(cp.dir, 'files.json');
  writeFileSync(filesPath, JSON.stringify({ ...cp.files, server: cp.server, dir: cp.dir }));
  process.env[FILES_ENV] = filesPath;
  publishInstalledState(cp.dir, {
    kubeconfigPath: cp.kubeconfigPath,
    binDir: cp.binDir,
    fleetToken: system.fleetToken,
    sandboxdUrl: system.sandboxdUrl,
    sandboxdToken: system.sandboxdToken,
    clusterCa: { cert: readFileSync(cp.files.caCert, 'utf8'), key: readFileSync(cp.files.caKey, 'utf8') },
    frontProxyClient: {
      cert: readFileSync(join(cp.dir, 'front-proxy-client.crt'), 'utf8'),
      key: readFileSync(join(cp.dir, 'front-proxy-client.key'), 'utf8'),
    },
    auditLogPath: audit.logPath,
    release: system.release,
  });
  const setupMs = Date.now() - started;
  globalThis.__sandboxScaleInstalled = { system, readyAt: Date.now(), setupMs };
  const f = system.figures;
  log(
    `control plane + node ${(f.controlPlaneMs / 1000).toFixed(0)} s, release (build and push) ${(f.imagesMs / 1000).toFixed(0)} s, helm install oci:// -> all Ready ${(f.installToReadyMs / 1000).toFixed(0)} s, setup ${(setupMs / 1000).toFixed(0)} s`,
  );
}
