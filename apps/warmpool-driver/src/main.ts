import { fleetTokenInput, kubeConfigInput, managerOptionsFromFlags, runApp } from '@sandbox-scale/kube-runtime';
import { LEASE_NAMES } from '@sandbox-scale/scale-core';
import { WarmpoolDriverFlagsSchema } from './config';
import { startDriver } from './start-driver';

void runApp({
  name: 'warmpool-driver',
  summary: 'Spreads each SandboxWarmPool over the nodes as warm targets (PUT /v1/pools) and reports warm counts in its status.',
  schema: WarmpoolDriverFlagsSchema,
  inputs: {
    kubeConfig: kubeConfigInput,
    fleetToken: fleetTokenInput,
  },
  start: ({ config, inputs: { kubeConfig, fleetToken }, log, registry }) => {
    const {
      log: _log,
      registry: _registry,
      kubeConfig: _kc,
      ...manager
    } = managerOptionsFromFlags(config, { log, registry, kubeConfig, leaseName: LEASE_NAMES.warmpoolDriver });
    return startDriver({
      kubeConfig,
      log,
      registry,
      fleetToken,
      sandboxdTokens: config.sandboxdTokens,
      syncIntervalMs: config.warmPoolSyncInterval,
      namespace: config.namespace,
      nodeInventorySelector: config.nodeInventorySelector,
      limits: { perPool: config.maxReplicasPerPool, perNamespace: config.maxReplicasPerNamespace },
      manager,
    });
  },
}).then((code) => process.exit(code));
