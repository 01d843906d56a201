import type { KubeResource } from '@sandbox-scale/kube-runtime';
import { RESOURCES } from '@sandbox-scale/scale-core';

// scale-core's descriptors, under the names this driver's code reads.
export const SandboxWarmPoolResource: KubeResource = RESOURCES.sandboxWarmPool;
export const SandboxTemplateResource: KubeResource = RESOURCES.sandboxTemplate;
export const NodeInventoryResource: KubeResource = RESOURCES.nodeInventory;
