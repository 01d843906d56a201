import type { KubeResource } from '@sandbox-scale/kube-runtime';
import {
  EXTENSIONS_API_VERSION,
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

/** Where each kind this controller reads or writes lives in the API (no discovery on a hot path). */
function extensions(r: { kind: string; plural: string; namespaced: boolean; group: string }): KubeResource {
  return { group: r.group, version: EXTENSIONS_API_VERSION.split('/')[1] ?? 'v1beta1', plural: r.plural, kind: r.kind, namespaced: r.namespaced };
}

export const SandboxClaimResource = extensions(RESOURCES.sandboxClaim);
export const SandboxWarmPoolResource = extensions(RESOURCES.sandboxWarmPool);
export const SandboxTemplateResource = extensions(RESOURCES.sandboxTemplate);
export const NodeInventoryResource = extensions(RESOURCES.nodeInventory);
export const SecretResource: KubeResource = { group: '', version: 'v1', plural: 'secrets', kind: 'Secret', namespaced: true };

export const parseClaim = (obj: unknown): SandboxClaim => parseObject(SandboxClaimSchema, obj);
export const parsePool = (obj: unknown): SandboxWarmPool => parseObject(SandboxWarmPoolSchema, obj);
export const parseTemplate = (obj: unknown): SandboxTemplate => parseObject(SandboxTemplateSchema, obj);
export const parseInventory = (obj: unknown): NodeInventory => parseObject(NodeInventorySchema, obj);
