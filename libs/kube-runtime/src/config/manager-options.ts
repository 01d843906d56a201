import { readFileSync } from 'node:fs';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Registry } from 'prom-client';
import type { Logger } from '../log/logger';
import type { ManagerOptions } from '../manager';
import { ConfigError } from './flags';
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

/**
 * client-go's rules for the three election timings: a leader must give up (renew deadline)
 * before a standby may take over (lease duration), and have room for one retry, jittered by up
 * to 20 %, within that deadline. Otherwise two replicas can lead at once.
 */
export function checkElectionTimings(flags: ManagerFlags): void {
  if (!flags.leaderElect) return;
  if (flags.leaderElectRenewDeadline >= flags.leaderElectLeaseDuration)
    throw new ConfigError(
      `--leader-elect-renew-deadline (${flags.leaderElectRenewDeadline} ms) must be shorter than --leader-elect-lease-duration (${flags.leaderElectLeaseDuration} ms)`,
      'leader-elect-renew-deadline',
    );
  if (flags.leaderElectRetryPeriod * 1.2 >= flags.leaderElectRenewDeadline)
    throw new ConfigError(
      `--leader-elect-retry-period (${flags.leaderElectRetryPeriod} ms) x 1.2 must be shorter than --leader-elect-renew-deadline (${flags.leaderElectRenewDeadline} ms)`,
      'leader-elect-retry-period',
    );
  if (flags.leaderElectLeaseDuration < 1000)
    throw new ConfigError(
      '--leader-elect-lease-duration must be at least 1s (a Lease counts whole seconds)',
      'leader-elect-lease-duration',
    );
}

/** Turns the shared flags into Manager options, so an app's main.ts stays wiring only. */
export function managerOptionsFromFlags(flags: ManagerFlags, w: ManagerWiring): ManagerOptions {
  checkElectionTimings(flags);
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
