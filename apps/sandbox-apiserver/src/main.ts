import { claimRefKeyInput, fleetTokenInput, followClaimRefKey, kubeConfigInput, runApp } from '@sandbox-scale/kube-runtime';
import { SandboxApiserverFlagsSchema, configFromFlags, peerCaOf } from './config';
import { startSandboxApiserver } from './server';

void runApp({
  name: 'sandbox-apiserver',
  summary: 'Aggregated API server for sandboxes.agents.x-k8s.io, served from NodeInventory objects',
  schema: SandboxApiserverFlagsSchema,
  inputs: {
    kubeConfig: kubeConfigInput,
    fleetToken: fleetTokenInput,
    claimRefKey: claimRefKeyInput,
    peerCaPem: { flag: '--peer-ca-file', read: (f) => peerCaOf(f) },
  },
  start: async ({ config, inputs, log, registry }) => {
    // storage, the lease renewer and the claim follower hold this object: a rotated keyring reaches them all at once
    const keys = await followClaimRefKey({ file: config.claimRefKeyFile, key: inputs.claimRefKey, log, registry });
    const running = await startSandboxApiserver({ ...configFromFlags(config, inputs), log, registry });
    return { ...running, stop: () => (keys.close(), running.stop()) };
  },
}).then((code) => process.exit(code));
