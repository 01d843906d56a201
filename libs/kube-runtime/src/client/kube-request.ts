import { HttpMethod, IsomorphicFetchHttpLibrary, type KubeConfig, RequestContext } from '@kubernetes/client-node';
import { KubeConfigError } from './kube-config';
import { apiException } from './api-errors';
import { kubeTransport } from './kube-transport';

/**
 * One raw API call with client-node's authentication (TLS, exec and token auth) over the
 * kubeconfig's kept-alive transport (kube-transport.ts). The generated typed APIs cannot
 * express what the runtime needs: a LIST at resourceVersion=0 of any resource, SSA on a status subresource, MicroTime fields written
 * exactly as the API server parses them. Non-2xx answers throw client-node's ApiException, so
 * the same `isNotFound`/`isConflict` predicates apply to both paths.
 */
export interface KubeRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal;
}

const methods: Record<KubeRequest['method'], HttpMethod> = {
  GET: HttpMethod.GET,
  POST: HttpMethod.POST,
  PUT: HttpMethod.PUT,
  PATCH: HttpMethod.PATCH,
  DELETE: HttpMethod.DELETE,
};

const http = new IsomorphicFetchHttpLibrary();

export function serverOf(kc: KubeConfig): string {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new KubeConfigError('the kubeconfig has no current cluster');
  return cluster.server.replace(/\/+$/, '');
}

/** Sends the request and returns the parsed JSON body (undefined when the body is empty). */
export async function kubeRequest(kc: KubeConfig, req: KubeRequest): Promise<unknown> {
  const ctx = new RequestContext(`${serverOf(kc)}${req.path}`, methods[req.method]);
  for (const [k, v] of Object.entries(req.query ?? {})) {
    if (v !== undefined) ctx.setQueryParam(k, String(v));
  }
  ctx.setHeaderParam('Accept', 'application/json');
  if (req.body !== undefined) {
    ctx.setHeaderParam('Content-Type', req.contentType ?? 'application/json');
    ctx.setBody(JSON.stringify(req.body));
  }
  if (req.signal) ctx.setSignal(req.signal);
  await kubeTransport(kc).auth.applySecurityAuthentication(ctx);
  const res = await http.send(ctx).toPromise();
  const text = await res.body.text();
  if (res.httpStatusCode < 200 || res.httpStatusCode > 299) {
    throw apiException(res.httpStatusCode, text, res.headers);
  }
  return text.length === 0 ? undefined : (JSON.parse(text) as unknown);
}
