import { kubeConfigInput, readFleetToken, runApp } from '@sandbox-scale/kube-runtime';
import { readFileSync } from 'node:fs';
import { InventoryPublisherFlagsSchema, noticeTargetOfFlags, publisherConfigFromFlags } from './config';
import { startPublisher } from './start-publisher';

void runApp({
  name: 'inventory-publisher',
  summary: "Publishes this node's sandboxd state (live sandboxes, warm pools) as one NodeInventory.",
  schema: InventoryPublisherFlagsSchema,
  inputs: {
    kubeConfig: kubeConfigInput,
    // this node's own root token (per-node tokens), else the fleet token
    fleetToken: {
      flag: '--sandboxd-token-file',
      read: (config) => (config.sandboxdTokenFile !== '' ? readTokenFile(config.sandboxdTokenFile) : readFleetToken(config.fleetTokenFile)),
    },
    notices: { flag: '--notice-ca-file', read: (config) => noticeTargetOfFlags(config, (f) => readFileSync(f, 'utf8')) },
  },
  start: ({ config, inputs: { kubeConfig, fleetToken, notices }, log, registry }) => {
    if (fleetToken === '')
      log.warn(
        'no sandboxd token (--sandboxd-token-file, --fleet-token-file or SANDBOX_SCALE_FLEET_TOKEN): sandboxd will refuse the reads and the inventory stays Stale',
      );
    return startPublisher({
      ...publisherConfigFromFlags(config, fleetToken),
      kubeConfig,
      log,
      registry,
      ...(notices === undefined ? {} : { notices }),
      manager: {
        metricsBindAddress: config.metricsBindAddress,
        healthProbeBindAddress: config.healthProbeBindAddress,
        metricsAuth: config.metricsAuth,
        metricsTlsCertFile: config.metricsTlsCertFile,
        metricsTlsPrivateKeyFile: config.metricsTlsPrivateKeyFile,
        gracefulShutdownTimeoutMs: config.gracefulShutdownTimeout,
      },
    });
  },
}).then((code) => process.exit(code));

function readTokenFile(file: string): string {
  const token = readFileSync(file, 'utf8').trim();
  if (token === '') throw new Error(`${file} is empty`);
  return token;
}
