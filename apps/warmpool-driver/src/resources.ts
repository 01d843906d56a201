import type { KubeResource } from '@sandbox-scale/kube-runtime';
import { API_VERSION, EXTENSIONS_GROUP, RESOURCES } from '@sandbox-scale/scale-core';

const crd = (r: (typeof RESOURCES)['sandboxWarmPool' | 'sandboxTemplate' | 'nodeInventory']): KubeResource => ({
  group: EXTENSIONS_GROUP,
  version: API_VERSION,
  plural: r.plural,
  kind: r.kind,
  namespaced: r.namespaced,
});

export const SandboxWarmPoolResource = crd(RESOURCES.sandboxWarmPool);
export const SandboxTemplateResource = crd(RESOURCES.sandboxTemplate);
export const NodeInventoryResource = crd(RESOURCES.nodeInventory);
