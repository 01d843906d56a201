import { type KubeConfig, PatchStrategy } from '@kubernetes/client-node';
import { kubeRequest } from './kube-request';
import { type KubeResource, resourcePath } from './resource';

export interface ListQuery {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** '0' serves the list from the API server's watch cache instead of etcd. */
  resourceVersion?: string;
  limit?: number;
  continue?: string;
  signal?: AbortSignal;
}

export interface WriteOptions {
  fieldManager?: string;
  signal?: AbortSignal;
}

/**
 * Reads and writes of one resource, returning raw JSON (`unknown`): callers parse with their
 * zod schema at this boundary. Reads on hot paths belong to an informer, not here.
 */
export class ResourceClient {
  constructor(
    private readonly kc: KubeConfig,
    readonly resource: KubeResource,
  ) {}

  get(namespace: string | undefined, name: string, signal?: AbortSignal): Promise<unknown> {
    return kubeRequest(this.kc, { method: 'GET', path: resourcePath(this.resource, { namespace, name }), signal });
  }

  list(q: ListQuery = {}): Promise<unknown> {
    return kubeRequest(this.kc, {
      method: 'GET',
      path: resourcePath(this.resource, { namespace: q.namespace }),
      query: {
        labelSelector: q.labelSelector,
        fieldSelector: q.fieldSelector,
        resourceVersion: q.resourceVersion,
        limit: q.limit,
        continue: q.continue,
      },
      signal: q.signal,
    });
  }

  create(namespace: string | undefined, body: unknown, opts: WriteOptions = {}): Promise<unknown> {
    return kubeRequest(this.kc, {
      method: 'POST',
      path: resourcePath(this.resource, { namespace }),
      query: { fieldManager: opts.fieldManager },
      body,
      signal: opts.signal,
    });
  }

  /** PUT: fails with 409 Conflict when body.metadata.resourceVersion is stale (optimistic concurrency). */
  replace(namespace: string | undefined, name: string, body: unknown, opts: WriteOptions = {}): Promise<unknown> {
    return kubeRequest(this.kc, {
      method: 'PUT',
      path: resourcePath(this.resource, { namespace, name }),
      query: { fieldManager: opts.fieldManager },
      body,
      signal: opts.signal,
    });
  }

  mergePatch(namespace: string | undefined, name: string, patch: unknown, opts: WriteOptions = {}): Promise<unknown> {
    return kubeRequest(this.kc, {
      method: 'PATCH',
      path: resourcePath(this.resource, { namespace, name }),
      query: { fieldManager: opts.fieldManager },
      body: patch,
      contentType: PatchStrategy.MergePatch,
      signal: opts.signal,
    });
  }

  /**
   * RFC 6902 JSON patch: atomic, so a leading `test` operation makes the whole write conditional
   * on what is stored (a failed test is a 422 and nothing is written).
   */
  jsonPatch(
    namespace: string | undefined,
    name: string,
    ops: readonly { op: string; path: string; value?: unknown }[],
    opts: WriteOptions = {},
  ): Promise<unknown> {
    return kubeRequest(this.kc, {
      method: 'PATCH',
      path: resourcePath(this.resource, { namespace, name }),
      query: { fieldManager: opts.fieldManager },
      body: ops,
      contentType: PatchStrategy.JsonPatch,
      signal: opts.signal,
    });
  }

  delete(namespace: string | undefined, name: string, signal?: AbortSignal): Promise<unknown> {
    return kubeRequest(this.kc, { method: 'DELETE', path: resourcePath(this.resource, { namespace, name }), signal });
  }
}
