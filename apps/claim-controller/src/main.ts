import { claimRefKeyInput, fleetTokenInput, followClaimRefKey, kubeConfigInput, runApp } from '@sandbox-scale/kube-runtime';
import { ClaimControllerFlagsSchema } from './config';
import { startClaimController } from './start-claim-controller';

void runApp({
  name: 'claim-controller',
  summary: 'sandbox-scale claim-controller: SandboxClaim -> node-local claim -> Bound; orphan healing; the HTTPS fast path',
  schema: ClaimControllerFlagsSchema,
  inputs: {
    kubeConfig: kubeConfigInput,
    fleetToken: fleetTokenInput,
    claimRefKey: claimRefKeyInput,
  },
  start: async ({ config, inputs: { kubeConfig, fleetToken, claimRefKey }, log, registry }) => {
    if (fleetToken === '')
      log.warn('no fleet token (--fleet-token-file or SANDBOX_SCALE_FLEET_TOKEN): every claim and release will be refused');
    // a rotated keyring reaches the fast path, the reconcilers and the orphan pass at once: they hold this object
    const keys = await followClaimRefKey({ file: config.claimRefKeyFile, key: claimRefKey, log, registry });
    const running = await startClaimController({ kubeConfig, fleetToken, claimRefKey, flags: config, log, registry });
    return { ...running, stop: () => (keys.close(), running.stop()) };
  },
}).then((code) => process.exit(code));
