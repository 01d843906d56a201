import { type KubeConfig, PatchStrategy } from '@kubernetes/client-node';
import { SandboxScaleError, findInCauseChain } from '@sandbox-scale/scale-core';
import { resolveResource } from './discovery';
import { kubeRequest } from './kube-request';
import { keyFieldsOf } from './object-meta';
import { type KubeResource, resourcePath } from './resource';

export class InvalidApplyObjectError extends SandboxScaleError {}

export function isInvalidApplyObject(err: unknown): boolean {
  return findInCauseChain(err, 'InvalidApplyObjectError') !== undefined;
}

/** What server-side apply needs from the body: the type and identity of the object. */
export interface ApplyBody {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; [field: string]: unknown };
  [field: string]: unknown;
}

export interface ApplyOptions<T> {
  /** `sandbox-scale/<app>`: the owner of the fields this body sets. */
  fieldManager: string;
  /** Take fields from other managers instead of failing with a conflict (controllers normally do). */
  force?: boolean;
  /** Skips discovery when the caller knows the resource (and required before a CRD is served). */
  resource?: KubeResource;
  dryRun?: boolean;
  signal?: AbortSignal;
  /** Parses the object the server returns; without it the raw JSON is returned. */
  parse?: (obj: unknown) => T;
}

async function apply<T>(kc: KubeConfig, obj: ApplyBody, opts: ApplyOptions<T>, subresource?: string): Promise<T> {
  const { name, namespace } = keyFieldsOf(obj);
  if (!name) throw new InvalidApplyObjectError(`cannot apply ${obj.kind}: metadata.name is empty`);
  const res = opts.resource ?? (await resolveResource(kc, obj.apiVersion, obj.kind));
  if (res.namespaced && !namespace) throw new InvalidApplyObjectError(`cannot apply ${obj.kind}/${name}: metadata.namespace is empty`);
  const out = await kubeRequest(kc, {
    method: 'PATCH',
    path: resourcePath(res, { namespace, name, subresource }),
    query: { fieldManager: opts.fieldManager, force: opts.force ? true : undefined, dryRun: opts.dryRun ? 'All' : undefined },
    body: obj,
    contentType: PatchStrategy.ServerSideApply,
    signal: opts.signal,
  });
  return opts.parse ? opts.parse(out) : (out as T);
}

/**
 * Server-side apply: the body states every field this manager owns; fields it leaves out are
 * removed if it owned them. An unchanged body is a no-op on the server (resourceVersion kept),
 * so callers may apply on every reconcile without diffing first.
 */
export function applyObject<T = unknown>(kc: KubeConfig, obj: ApplyBody, opts: ApplyOptions<T>): Promise<T> {
  return apply(kc, obj, opts);
}

/** Server-side apply to the status subresource; the body carries only identity and status. */
export function applyStatus<T = unknown>(kc: KubeConfig, obj: ApplyBody & { status: unknown }, opts: ApplyOptions<T>): Promise<T> {
  return apply(kc, obj, opts, 'status');
}
