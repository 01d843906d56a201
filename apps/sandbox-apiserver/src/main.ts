import { createLogger, loadConfigOrExit, loadKubeConfig, setupSignalHandler } from '@sandbox-scale/kube-runtime';
import { ConfigSchema, configFromFlags } from './config';
import { startSandboxApiserver } from './server';

async function main(): Promise<void> {
  const flags = loadConfigOrExit(ConfigSchema, { program: 'sandbox-apiserver', summary: 'Aggregated API server for sandboxes.agents.x-k8s.io, served from NodeInventory objects' });
  const log = createLogger({ name: 'sandbox-apiserver' });
  const server = await startSandboxApiserver({ ...configFromFlags(flags, loadKubeConfig(flags.kubeconfig)), log });
  const signal = setupSignalHandler();
  await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
  await server.stop();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
