import { Registry, collectDefaultMetrics } from 'prom-client';
import { createLogger, loadConfigOrExit, loadKubeConfig, setupSignalHandler } from '@sandbox-scale/kube-runtime';
import { PublisherFlagsSchema, publisherConfigFromFlags } from './config';
import { startPublisher } from './start-publisher';

const flags = loadConfigOrExit(PublisherFlagsSchema, {
  program: 'inventory-publisher',
  summary: "Publishes this node's sandboxd state (live sandboxes, warm pools) as one NodeInventory.",
});
const log = createLogger({ name: 'inventory-publisher' });
const registry = new Registry();
collectDefaultMetrics({ register: registry });
const config = publisherConfigFromFlags(flags);
if (config.fleetToken === '') log.warn('no fleet token (--fleet-token-file or SANDBOX_SCALE_FLEET_TOKEN): sandboxd will refuse the reads and the inventory stays Stale');

const running = startPublisher({
  ...config,
  kubeConfig: loadKubeConfig(flags.kubeconfig),
  log,
  registry,
  manager: { metricsBindAddress: flags.metricsBindAddress, healthProbeBindAddress: flags.healthProbeBindAddress, gracefulShutdownTimeoutMs: flags.gracefulShutdownTimeout },
});
const signal = setupSignalHandler();
signal.addEventListener('abort', () => void running.stop().catch(() => undefined), { once: true });
running.done.then(
  () => process.exit(0),
  (err: unknown) => {
    log.error({ err }, 'inventory-publisher stopped');
    process.exit(1);
  },
);
