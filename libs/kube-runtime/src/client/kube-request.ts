import * as http from 'node:http';
import * as https from 'node:https';
import { HttpMethod, type KubeConfig, RequestContext } from '@kubernetes/client-node';
import { KubeConfigError } from './kube-config';
import { apiException } from './api-errors';
import { kubeTransport } from './kube-transport';
import { socketReleased } from '../http/socket-released';

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

interface Reply {
  readonly code: number;
  readonly text: string;
  readonly res: http.IncomingMessage;
}

/** The reply's headers flattened for client-node's ApiException (read only for an error). */
function headersOf(res: http.IncomingMessage): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) flat[k] = Array.isArray(v) ? v.join(', ') : v;
  return flat;
}

/**
 * Sends an authenticated request over the agent the transport set on it. Plain node:http, not
 * client-node's fetch: a tenth of a millisecond less per call and no content decoding (the API
 * server only compresses for clients that ask, and the pods sit next to it).
 */
function send(ctx: RequestContext, body: string | undefined, retryStale = true): Promise<Reply> {
  const url = ctx.getUrl();
  const headers: http.OutgoingHttpHeaders = { ...ctx.getHeaders() };
  if (body !== undefined) headers['Content-Length'] = Buffer.byteLength(body);
  const signal = ctx.getSignal();
  const options: https.RequestOptions = {
    method: ctx.getHttpMethod(),
    agent: ctx.getAgent() as http.Agent | undefined,
    headers,
    ...(signal ? { signal } : {}),
  };
  return new Promise<Reply>((resolve, reject) => {
    const onReply = (res: http.IncomingMessage): void => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const reply = { code: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), res };
        // the next call should find this socket free, not open another
        void released.then(() => resolve(reply));
      });
    };
    const req = url.startsWith('http:') ? http.request(url, options, onReply) : https.request(url, options, onReply);
    const released = socketReleased(req);
    req.on('error', (err: NodeJS.ErrnoException) => {
      // A kept-alive socket the server closed as this request went out: a read is safe to send
      // again, on a fresh socket (Node's documented pattern for request.reusedSocket).
      if (retryStale && req.reusedSocket && err.code === 'ECONNRESET' && options.method === 'GET' && !signal?.aborted)
        resolve(send(ctx, body, false));
      else reject(err);
    });
    req.end(body);
  });
}

export function serverOf(kc: KubeConfig): string {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new KubeConfigError('the kubeconfig has no current cluster');
  return cluster.server.replace(/\/+$/, '');
}

/** Sends the request and returns the parsed JSON body (undefined when the body is empty). */
export async function kubeRequest(kc: KubeConfig, req: KubeRequest): Promise<unknown> {
  // the query is encoded once here: RequestContext.setQueryParam re-serializes the URL per parameter
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) query.set(k, String(v));
  const search = query.size > 0 ? `${req.path.includes('?') ? '&' : '?'}${query.toString()}` : '';
  const ctx = new RequestContext(`${serverOf(kc)}${req.path}${search}`, methods[req.method]);
  ctx.setHeaderParam('Accept', 'application/json');
  const body = req.body === undefined ? undefined : JSON.stringify(req.body);
  if (body !== undefined) ctx.setHeaderParam('Content-Type', req.contentType ?? 'application/json');
  if (req.signal) ctx.setSignal(req.signal);
  await kubeTransport(kc).auth.applySecurityAuthentication(ctx);
  const res = await send(ctx, body);
  if (res.code < 200 || res.code > 299) throw apiException(res.code, res.text, headersOf(res.res));
  return res.text.length === 0 ? undefined : (JSON.parse(res.text) as unknown);
}
