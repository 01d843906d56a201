import type { KubeConfig } from '@kubernetes/client-node';
import { z } from 'zod';
import { SandboxScaleError, findInCauseChain } from '@sandbox-scale/scale-core';
import { kubeRequest } from './kube-request';
import type { KubeResource } from './resource';

export class UnknownKindError extends SandboxScaleError {}

export function isUnknownKind(err: unknown): boolean {
  return findInCauseChain(err, 'UnknownKindError') !== undefined;
}

const ResourceListSchema = z.object({
  resources: z.array(z.object({ name: z.string(), kind: z.string(), namespaced: z.boolean() })),
});

type ResourceList = z.infer<typeof ResourceListSchema>;

// One discovery document per group/version per KubeConfig; a miss re-fetches, since a CRD
// installed after start should become usable without a restart.
const cache = new WeakMap<KubeConfig, Map<string, ResourceList>>();

function splitApiVersion(apiVersion: string): { group: string; version: string } {
  const i = apiVersion.indexOf('/');
  return i === -1 ? { group: '', version: apiVersion } : { group: apiVersion.slice(0, i), version: apiVersion.slice(i + 1) };
}

async function fetchList(kc: KubeConfig, apiVersion: string): Promise<ResourceList> {
  const { group } = splitApiVersion(apiVersion);
  const path = group === '' ? `/api/${apiVersion}` : `/apis/${apiVersion}`;
  return ResourceListSchema.parse(await kubeRequest(kc, { method: 'GET', path }));
}

/** Resolves apiVersion + kind to the resource the API serves it as (plural, scope). */
export async function resolveResource(kc: KubeConfig, apiVersion: string, kind: string): Promise<KubeResource> {
  let perKc = cache.get(kc);
  if (!perKc) {
    perKc = new Map();
    cache.set(kc, perKc);
  }
  const find = (list: ResourceList | undefined) => list?.resources.find((r) => r.kind === kind && !r.name.includes('/'));
  let hit = find(perKc.get(apiVersion));
  if (!hit) {
    const list = await fetchList(kc, apiVersion);
    perKc.set(apiVersion, list);
    hit = find(list);
  }
  if (!hit) throw new UnknownKindError(`the API server does not serve kind ${kind} in ${apiVersion}`);
  return { ...splitApiVersion(apiVersion), plural: hit.name, kind, namespaced: hit.namespaced };
}
