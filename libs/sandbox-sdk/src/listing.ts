import type { KubeConfig } from '@kubernetes/client-node';
import { EXTENSIONS_API_VERSION, SANDBOX_API_VERSION } from '@sandbox-scale/scale-core';
import { z } from 'zod';
import { ClaimObjectSchema, type ClaimObject } from './claim-status';
import { call, claimTarget, sandboxTarget } from './kube-api';
import type { RequestTarget } from './errors';

/** Which objects a list reads: one namespace or all, and a label selector as kubectl -l takes it. */
export interface ListScope {
  namespace: string;
  allNamespaces?: boolean;
  labelSelector?: string;
  signal?: AbortSignal;
}

const ConditionSchema = z.looseObject({ type: z.string(), status: z.string(), reason: z.string().optional() });

/**
 * What the SDK reads of a Sandbox as sandbox-apiserver serves it: loose, as a served object
 * grows fields over versions and a client keeps working across them.
 */
export const SandboxObjectSchema = z.looseObject({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: z.looseObject({
    name: z.string(),
    namespace: z.string().optional(),
    labels: z.record(z.string(), z.string()).optional(),
    annotations: z.record(z.string(), z.string()).optional(),
    creationTimestamp: z.string().nullable().optional(),
  }),
  status: z
    .looseObject({
      nodeName: z.string().optional(),
      podIPs: z.array(z.string()).optional(),
      conditions: z.array(ConditionSchema).optional(),
    })
    .optional(),
});
export type SandboxObject = z.infer<typeof SandboxObjectSchema>;

/** Page size of a list: at a million sandboxes a list is read in pages, as kubectl reads it. */
const PAGE = 500;

const PageSchema = z.looseObject({
  metadata: z.looseObject({ continue: z.string().optional() }).optional(),
  items: z.array(z.unknown()).nullable().optional(),
});

async function listAll<T>(kc: KubeConfig, path: string, scope: ListScope, target: RequestTarget, item: z.ZodType<T>): Promise<T[]> {
  const items: T[] = [];
  let cont: string | undefined;
  do {
    const page = PageSchema.parse(
      await call(
        kc,
        { method: 'GET', path, query: { limit: PAGE, continue: cont, labelSelector: scope.labelSelector }, signal: scope.signal },
        target,
      ),
    );
    for (const raw of page.items ?? []) items.push(item.parse(raw));
    cont = page.metadata?.continue || undefined;
  } while (cont);
  return items;
}

const scoped = (scope: ListScope, apiVersion: string, plural: string): string =>
  scope.allNamespaces ? `/apis/${apiVersion}/${plural}` : `/apis/${apiVersion}/namespaces/${encodeURIComponent(scope.namespace)}/${plural}`;

/** Sandboxes as sandbox-apiserver serves them: claimed ones and those made without a claim. */
export function listSandboxObjects(kc: KubeConfig, scope: ListScope): Promise<SandboxObject[]> {
  const target = scope.allNamespaces ? { ...sandboxTarget('list', ''), namespace: undefined } : sandboxTarget('list', scope.namespace);
  return listAll(kc, scoped(scope, SANDBOX_API_VERSION, 'sandboxes'), scope, target, SandboxObjectSchema);
}

/** SandboxClaims; with allNamespaces the caller needs list on them cluster-wide. */
export function listClaimObjects(kc: KubeConfig, scope: ListScope): Promise<ClaimObject[]> {
  const target = scope.allNamespaces ? { ...claimTarget('list', ''), namespace: undefined } : claimTarget('list', scope.namespace);
  return listAll(kc, scoped(scope, EXTENSIONS_API_VERSION, 'sandboxclaims'), scope, target, ClaimObjectSchema);
}
