import { ConfigError, fleetTokenInput, kubeConfigInput, managerOptionsFromFlags, runApp } from '@sandbox-scale/kube-runtime';
import { LEASE_NAMES } from '@sandbox-scale/scale-core';
import { WarmpoolDriverFlagsSchema } from './config';
import { startDriver } from './start-driver';

/** How often the leader looks at the kept certificates besides each one's renewal time: a deleted Secret comes back within it. */
const CERTIFICATE_RESYNC_MS = 5 * 60_000;

void runApp({
  name: 'warmpool-driver',
  summary: 'Spreads each SandboxWarmPool over the nodes as warm targets (PUT /v1/pools) and reports warm counts in its status.',
  schema: WarmpoolDriverFlagsSchema,
  inputs: {
    kubeConfig: kubeConfigInput,
    fleetToken: fleetTokenInput,
  },
  start: ({ config, inputs: { kubeConfig, fleetToken }, log, registry }) => {
    // a certificate due for renewal as soon as it is signed would be signed again on every pass
    if (config.keepCertificates && config.certificateRenewBefore >= config.certificateValidity)
      throw new ConfigError('must be shorter than --certificate-validity', 'certificateRenewBefore');
    if (config.keepCertificates && config.caRenewBefore >= config.caValidity)
      throw new ConfigError('must be shorter than --ca-validity', 'caRenewBefore');
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
      ...(config.keepCertificates
        ? {
            certificates: {
              objects: config.keepCertificates,
              times: {
                caValidityMs: config.caValidity,
                caRenewBeforeMs: config.caRenewBefore,
                caRotationOverlapMs: config.caRotationOverlap,
                claimRefKeyGraceMs: config.claimRefKeyGrace,
                servingValidityMs: config.certificateValidity,
                renewBeforeMs: config.certificateRenewBefore,
                resyncMs: CERTIFICATE_RESYNC_MS,
              },
            },
          }
        : {}),
      manager,
    });
  },
}).then((code) => process.exit(code));
