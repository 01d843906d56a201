import type { Logger } from '@sandbox-scale/kube-runtime';
import type { Registry } from 'prom-client';
import type { SandboxStorage } from '../storage/sandbox-storage';
import { DataPlaneAudit } from './data-plane-audit';
import type { DataPlane } from './data-plane-handler';
import { ExecStorage } from './exec-storage';
import { DEFAULT_MAX_FILE_BYTES, FilesStorage } from './files-storage';
import { PortForwardStorage } from './portforward';
import { SandboxAccess } from './sandbox-access';

export interface DataPlaneOptions {
  /** Where the served sandboxes are found, and their nodes' clients (with the fleet token). */
  readonly reads: SandboxStorage;
  readonly log: Logger;
  readonly registry: Registry;
  /** The largest file (or tar stream) one PUT writes; default 256 MiB. */
  readonly maxFileBytes?: number;
}

export interface InstalledDataPlane extends DataPlane {
  readonly access: SandboxAccess;
}

/** The storages of exec, files and portforward over one SandboxAccess and one audit. */
export function installDataPlane(opts: DataPlaneOptions): InstalledDataPlane {
  const access = new SandboxAccess(opts.reads);
  const audit = new DataPlaneAudit(opts.log, opts.registry);
  return {
    access,
    exec: new ExecStorage(access, audit),
    files: new FilesStorage(access, audit, opts.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES),
    portForward: new PortForwardStorage(access, audit),
  };
}
