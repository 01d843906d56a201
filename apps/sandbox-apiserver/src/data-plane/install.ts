import { MemoryBudget, type Logger, type MemoryBudgetCaps } from '@sandbox-scale/kube-runtime';
import type { Registry } from 'prom-client';
import type { SandboxStorage } from '../storage/sandbox-storage';
import { DataPlaneAudit } from './data-plane-audit';
import type { DataPlane } from './data-plane-handler';
import { DEFAULT_MAX_EXEC_OUTPUT_BYTES, DEFAULT_MAX_EXEC_TIMEOUT_SECONDS, ExecStorage } from './exec-storage';
import { DEFAULT_RELAY_BOUNDS, type RelayBounds } from './relay-bounds';
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
  /** The most stdout + stderr one exec answers with; default the node's own cap (8 MiB). */
  readonly maxExecOutputBytes?: number;
  /** Bytes replies in flight may hold; default DEFAULT_REPLY_MEMORY. */
  readonly replyMemory?: MemoryBudgetCaps;
  /** The longest an exec runs; default DEFAULT_MAX_EXEC_TIMEOUT_SECONDS. */
  readonly maxExecTimeoutSeconds?: number;
  /** A port-forward's idle and maximum time; default DEFAULT_RELAY_BOUNDS. */
  readonly portForwardBounds?: RelayBounds;
}

/**
 * What replies in flight may hold by default: under a third of the chart's 512 MiB memory limit
 * for the server (the rest is its caches and what the collector has not freed yet), and for one
 * namespace enough for one exec whose 8 MiB of output are all control bytes (its reply is 48 MiB,
 * held twice while it is decoded), so the rest stays for every other namespace.
 */
export const DEFAULT_REPLY_MEMORY: MemoryBudgetCaps = { maxBytes: 144 << 20, maxBytesPerNamespace: 104 << 20 };

export interface InstalledDataPlane extends DataPlane {
  readonly access: SandboxAccess;
}

/** The storages of exec, files and portforward over one SandboxAccess and one audit. */
export function installDataPlane(opts: DataPlaneOptions): InstalledDataPlane {
  const access = new SandboxAccess(opts.reads);
  const audit = new DataPlaneAudit(opts.log, opts.registry);
  return {
    access,
    memory: new MemoryBudget(opts.replyMemory ?? DEFAULT_REPLY_MEMORY),
    exec: new ExecStorage(access, audit, {
      maxOutputBytes: opts.maxExecOutputBytes ?? DEFAULT_MAX_EXEC_OUTPUT_BYTES,
      maxTimeoutSeconds: opts.maxExecTimeoutSeconds ?? DEFAULT_MAX_EXEC_TIMEOUT_SECONDS,
    }),
    files: new FilesStorage(access, audit, opts.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES),
    portForward: new PortForwardStorage(access, audit, opts.portForwardBounds ?? DEFAULT_RELAY_BOUNDS),
  };
}
