import { collectDefaultMetrics, Registry } from 'prom-client';
import { createLogger, loadConfigOrExit, loadKubeConfig, setupSignalHandler } from '@sandbox-scale/kube-runtime';
import { ConfigSchema, configFromFlags } from './config';
import { startSandboxApiserver } from './server';

async function main(): Promise<void> {
  const flags = loadConfigOrExit(ConfigSchema, { program: 'sandbox-apiserver', summary: 'Aggregated API server for sandboxes.agents.x-k8s.io, served from NodeInventory objects' });
  const log = createLogger({ name: 'sandbox-apiserver' });
  // process metrics (CPU, memory, event loop lag, GC) beside the request and inventory metrics
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const server = await startSandboxApiserver({ ...configFromFlags(flags, loadKubeConfig(flags.kubeconfig)), log, registry });
  const signal = setupSignalHandler();
  await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
  await server.stop();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
