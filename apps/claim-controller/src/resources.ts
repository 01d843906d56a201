import type { KubeResource } from '@sandbox-scale/kube-runtime';
import {
  NodeInventorySchema,
  parseObject,
  RESOURCES,
  SandboxClaimSchema,
  SandboxTemplateSchema,
  SandboxWarmPoolSchema,
  type NodeInventory,
  type SandboxClaim,
  type SandboxTemplate,
  type SandboxWarmPool,
} from '@sandbox-scale/scale-core';

// Where each kind this controller reads or writes lives in the API (no discovery on a hot path):
// scale-core's descriptors, under the names this controller's code reads.
export const SandboxClaimResource: KubeResource = RESOURCES.sandboxClaim;
export const SandboxWarmPoolResource: KubeResource = RESOURCES.sandboxWarmPool;
export const SandboxTemplateResource: KubeResource = RESOURCES.sandboxTemplate;
export const NodeInventoryResource: KubeResource = RESOURCES.nodeInventory;
export const SecretResource: KubeResource = { group: '', version: 'v1', plural: 'secrets', kind: 'Secret', namespaced: true };

export const parseClaim = (obj: unknown): SandboxClaim => parseObject(SandboxClaimSchema, obj);
export const parsePool = (obj: unknown): SandboxWarmPool => parseObject(SandboxWarmPoolSchema, obj);
export const parseTemplate = (obj: unknown): SandboxTemplate => parseObject(SandboxTemplateSchema, obj);
export const parseInventory = (obj: unknown): NodeInventory => parseObject(NodeInventorySchema, obj);
