import { Registry, collectDefaultMetrics } from 'prom-client';
import { createLogger, loadConfigOrExit, loadKubeConfig, managerOptionsFromFlags, setupSignalHandler } from '@sandbox-scale/kube-runtime';
import { LEASE_NAMES } from '@sandbox-scale/scale-core';
import { DriverFlagsSchema, readFleetToken } from './config';
import { startDriver } from './start-driver';

const flags = loadConfigOrExit(DriverFlagsSchema, {
  program: 'warmpool-driver',
  summary: 'Spreads each SandboxWarmPool over the nodes as warm targets (PUT /v1/pools) and reports warm counts in its status.',
});
const log = createLogger({ name: 'warmpool-driver' });
const registry = new Registry();
collectDefaultMetrics({ register: registry });
const kubeConfig = loadKubeConfig(flags.kubeconfig);
const { log: _log, registry: _registry, kubeConfig: _kc, ...manager } = managerOptionsFromFlags(flags, { log, registry, kubeConfig, leaseName: LEASE_NAMES.warmpoolDriver });

const running = startDriver({
  kubeConfig, log, registry, fleetToken: readFleetToken(flags.fleetTokenFile), syncIntervalMs: flags.warmPoolSyncInterval,
  namespace: flags.namespace,
  nodeInventorySelector: flags.nodeInventorySelector,
  manager,
});
const signal = setupSignalHandler();
signal.addEventListener('abort', () => void running.stop().catch(() => undefined), { once: true });
running.done.then(
  () => process.exit(0),
  (err: unknown) => {
    log.error({ err }, 'warmpool-driver stopped');
    process.exit(1);
  },
);
