import { claimRefKeyInput, fleetTokenInput, kubeConfigInput, runApp } from '@sandbox-scale/kube-runtime';
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
  start: ({ config, inputs, log, registry }) => startSandboxApiserver({ ...configFromFlags(config, inputs), log, registry }),
}).then((code) => process.exit(code));
