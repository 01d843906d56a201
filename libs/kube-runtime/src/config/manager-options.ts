import { readFileSync } from 'node:fs';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Registry } from 'prom-client';
import type { Logger } from '../log/logger';
import type { ManagerOptions } from '../manager';
import type { ManagerFlags } from './manager-flags';

const SA_NAMESPACE_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/** The pod's namespace: $POD_NAMESPACE (downward API), else the service account's, else `default`. */
export function podNamespace(env: Record<string, string | undefined> = process.env, file = SA_NAMESPACE_FILE): string {
  if (env.POD_NAMESPACE) return env.POD_NAMESPACE;
  try {
    return readFileSync(file, 'utf8').trim() || 'default';
  } catch {
    return 'default';
  }
}

export interface ManagerWiring {
  log: Logger;
  registry: Registry;
  kubeConfig: KubeConfig;
  /** Lease name, one per component (`sandbox-scale-warmpool-driver`). */
  leaseName: string;
  env?: Record<string, string | undefined>;
}

/** Turns the shared flags into Manager options, so an app's main.ts stays wiring only. */
export function managerOptionsFromFlags(flags: ManagerFlags, w: ManagerWiring): ManagerOptions {
  return {
    log: w.log,
    registry: w.registry,
    kubeConfig: w.kubeConfig,
    leaderElection: flags.leaderElect
      ? {
          namespace: flags.leaderElectionNamespace || podNamespace(w.env),
          name: w.leaseName,
          leaseDurationMs: flags.leaderElectLeaseDuration,
          renewDeadlineMs: flags.leaderElectRenewDeadline,
          retryPeriodMs: flags.leaderElectRetryPeriod,
        }
      : undefined,
    metricsBindAddress: flags.metricsBindAddress,
    healthProbeBindAddress: flags.healthProbeBindAddress,
    metricsAuth: flags.metricsAuth,
    metricsTlsCertFile: flags.metricsTlsCertFile,
    metricsTlsPrivateKeyFile: flags.metricsTlsPrivateKeyFile,
    gracefulShutdownTimeoutMs: flags.gracefulShutdownTimeout,
  };
}
