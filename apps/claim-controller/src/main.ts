import { collectDefaultMetrics, Registry } from 'prom-client';
import { createLogger, loadConfigOrExit, loadKubeConfig, setupSignalHandler } from '@sandbox-scale/kube-runtime';
import { ClaimControllerConfigSchema, loadFleetToken } from './config';
import { startClaimController } from './start-claim-controller';

async function main(): Promise<void> {
  const flags = loadConfigOrExit(ClaimControllerConfigSchema, { program: 'claim-controller', summary: 'sandbox-scale claim-controller: SandboxClaim -> node-local claim -> Bound; orphan healing; the HTTPS fast path' });
  const log = createLogger({ name: 'claim-controller' });
  const fleetToken = loadFleetToken(flags.fleetTokenFile);
  if (fleetToken === '') log.warn('no fleet token (--fleet-token-file or SANDBOX_SCALE_FLEET_TOKEN): every claim and release will be refused');
  const signal = setupSignalHandler();
  // process metrics (CPU, memory, event loop lag, GC) beside the controller's own
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const handle = await startClaimController({ kubeConfig: loadKubeConfig(flags.kubeconfig || undefined), fleetToken, flags, log, registry });
  signal.addEventListener('abort', () => void handle.stop(), { once: true });
  await handle.done;
}

main().catch((err: unknown) => {
  process.stderr.write(`claim-controller: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
