import type { KubeConfig } from '@kubernetes/client-node';
import { ResourceClient } from '@sandbox-scale/kube-runtime';
import { EXTENSIONS_API_VERSION, RESOURCES } from '@sandbox-scale/scale-core';

/** The `base` SandboxTemplate (one container of `image`) and the `base` SandboxWarmPool of `replicas` over it, in `ns`. */
export async function createBasePool(kc: KubeConfig, ns: string, image: string, replicas: number): Promise<void> {
  await new ResourceClient(kc, RESOURCES.sandboxTemplate).create(ns, {
    apiVersion: EXTENSIONS_API_VERSION,
    kind: 'SandboxTemplate',
    metadata: { name: 'base' },
    spec: { podTemplate: { spec: { containers: [{ name: 'main', image }] } } },
  });
  await new ResourceClient(kc, RESOURCES.sandboxWarmPool).create(ns, {
    apiVersion: EXTENSIONS_API_VERSION,
    kind: 'SandboxWarmPool',
    metadata: { name: 'base' },
    spec: { replicas, sandboxTemplateRef: { name: 'base' } },
  });
}
