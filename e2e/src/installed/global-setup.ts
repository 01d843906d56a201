import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { auditArgs } from '../control-plane/audit';
import { INSTALLED_AUDIT } from './audit-policy';
import { BIN_DIR_ENV, KUBECONFIG_ENV } from '../control-plane/global-setup';
import { TARGET_ENV } from '../system/system-under-test';
import {
  connectExistingCluster,
  EXISTING_CLUSTER_ENV,
  readExistingCluster,
  startLocalInstallTarget,
  type InstallTarget,
} from './install-target';
import { removeInstalled, startInstalledSystem, type InstalledSystem } from './installed-system';
import { publishInstalledState } from './installed-target';
import { installedSuiteHelmArgs } from './installed-values';

declare global {
  var __sandboxScaleInstalled: { system: InstalledSystem; readyAt: number; setupMs: number } | undefined;
}

const log = (m: string): void => void process.stderr.write(`[installed] ${m}\n`);

async function installTarget(): Promise<InstallTarget> {
  const existing = process.env[EXISTING_CLUSTER_ENV];
  if (existing) {
    log(`installing into the cluster ${existing} describes`);
    return connectExistingCluster(readExistingCluster(existing), removeInstalled);
  }
  const auditDir = join('/tmp', `sandbox-scale-installed-audit-${process.pid}`);
  mkdirSync(auditDir, { recursive: true, mode: 0o700 });
  const audit = auditArgs(auditDir, INSTALLED_AUDIT);
  const target = await startLocalInstallTarget({ log, apiserverArgs: audit.args });
  return { ...target, auditLogPath: audit.logPath };
}

/**
 * The installed run: a cluster with one node (started here, or kind's), a release pushed to a
 * registry its node pulls from, the chart installed once by helm; every suite of the run connects
 * to it (SANDBOX_SCALE_E2E_TARGET=installed).
 */
export default async function globalSetup(): Promise<void> {
  const started = Date.now();
  process.env[TARGET_ENV] = 'installed';
  const target = await installTarget();
  const system = await startInstalledSystem(target, { log, helmArgs: installedSuiteHelmArgs() });
  process.env[KUBECONFIG_ENV] = target.kubeconfigPath;
  process.env[BIN_DIR_ENV] = target.binDir;
  publishInstalledState(target.dir, {
    kubeconfigPath: target.kubeconfigPath,
    binDir: target.binDir,
    fleetToken: system.fleetToken,
    sandboxdUrl: system.sandboxdUrl,
    sandboxdToken: system.sandboxdToken,
    clusterCa: target.clusterCa,
    frontProxyClient: target.frontProxyClient,
    auditLogPath: target.auditLogPath,
    release: system.release,
  });
  const setupMs = Date.now() - started;
  globalThis.__sandboxScaleInstalled = { system, readyAt: Date.now(), setupMs };
  const f = system.figures;
  log(
    `control plane + node ${(f.controlPlaneMs / 1000).toFixed(0)} s, release (build and push) ${(f.imagesMs / 1000).toFixed(0)} s, helm install oci:// -> all Ready ${(f.installToReadyMs / 1000).toFixed(0)} s, setup ${(setupMs / 1000).toFixed(0)} s`,
  );
}
