import * as http from 'node:http';
import * as https from 'node:https';
import { Readable } from 'node:stream';
import { ApiException, HttpMethod, RequestContext, type KubeConfig } from '@kubernetes/client-node';
import { KubeConfigError, kubeTransport } from '@sandbox-scale/kube-runtime';
import { SdkError, toSdkError, type RequestTarget } from './errors';

/**
 * Requests whose bodies are streams, not JSON documents: file contents and tar archives, in
 * either direction. They go over the kubeconfig's kept-alive transport (the same TLS identity,
 * credentials and sockets as every other API call of the SDK), so a user's exec plugin, token
 * file or client certificate is honoured exactly as kubectl would.
 */
export interface StreamRequest {
  method: 'GET' | 'PUT' | 'POST' | 'DELETE';
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  headers?: Record<string, string>;
  /** Sent with a Content-Length when a Buffer, chunked when a stream. */
  body?: Buffer | Readable;
  signal?: AbortSignal;
}

/** An error answer is read up to this much: a Status is small, and a hostile server is not read without end. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;

const METHODS: Record<StreamRequest['method'], HttpMethod> = {
  GET: HttpMethod.GET,
  PUT: HttpMethod.PUT,
  POST: HttpMethod.POST,
  DELETE: HttpMethod.DELETE,
};

export interface Authenticated {
  url: URL;
  headers: http.OutgoingHttpHeaders;
  agent: http.Agent | undefined;
}

/** The URL of `path` on the current cluster, with the headers and agent client-node's authentication gives it. */
export async function authenticated(
  kc: KubeConfig,
  method: StreamRequest['method'],
  path: string,
  query: StreamRequest['query'] = {},
): Promise<Authenticated> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new KubeConfigError('the kubeconfig has no current cluster');
  const url = new URL(`${cluster.server.replace(/\/+$/, '')}${path}`);
  for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, String(v));
  const ctx = new RequestContext(url.toString(), METHODS[method]);
  await kubeTransport(kc).auth.applySecurityAuthentication(ctx);
  return { url, headers: { ...ctx.getHeaders() }, agent: ctx.getAgent() as http.Agent | undefined };
}

/** Starts a request on the transport `auth` was made for. */
export function sendOn(auth: Authenticated, method: string, headers: http.OutgoingHttpHeaders, signal?: AbortSignal): http.ClientRequest {
  const options: https.RequestOptions = {
    method,
    headers: { ...auth.headers, ...headers },
    ...(auth.agent ? { agent: auth.agent } : {}),
    ...(signal ? { signal } : {}),
  };
  return auth.url.protocol === 'http:' ? http.request(auth.url, options) : https.request(auth.url, options);
}

/** Reads an error answer (bounded) and turns it into the SDK's typed error naming the request. */
export async function errorOf(res: http.IncomingMessage, target: RequestTarget, signal?: AbortSignal): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_ERROR_BODY_BYTES) break;
      chunks.push(chunk);
    }
  } catch {
    // the status line is the answer; a body cut short only loses the message
  }
  res.destroy();
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
  const body = Buffer.concat(chunks).toString('utf8');
  const code = res.statusCode ?? 0;
  return toSdkError(new ApiException(code, `HTTP ${code}`, body, headers), target, signal);
}

/**
 * Sends the request and resolves with the answer once its status is 2xx, its body not yet
 * read (the caller streams it). A non-2xx answer is read and thrown as a typed error. An
 * answer that comes while the body is still being sent (a 413 part-way through an upload)
 * is the outcome: the rest of the body is dropped.
 */
export async function openStream(kc: KubeConfig, req: StreamRequest, target: RequestTarget): Promise<http.IncomingMessage> {
  const auth = await authenticated(kc, req.method, req.path, req.query);
  const headers: http.OutgoingHttpHeaders = { Accept: 'application/json', ...req.headers };
  if (Buffer.isBuffer(req.body)) headers['Content-Length'] = req.body.length;
  else if (req.body === undefined && req.method !== 'GET' && req.method !== 'DELETE') headers['Content-Length'] = 0;
  return new Promise<http.IncomingMessage>((resolve, reject) => {
    let answered = false;
    const r = sendOn(auth, req.method, headers, req.signal);
    r.on('response', (res) => {
      answered = true;
      const code = res.statusCode ?? 0;
      if (code >= 200 && code < 300) {
        resolve(res);
        return;
      }
      // the server has decided: what is left of an upload is not read (and its file is closed)
      if (req.body instanceof Readable && !req.body.readableEnded) {
        req.body.unpipe(r);
        req.body.destroy();
      }
      void errorOf(res, target, req.signal).then(reject);
    });
    r.on('error', (err) => {
      if (!answered) reject(toSdkError(err, target, req.signal));
    });
    const body = req.body;
    if (body instanceof Readable) {
      body.on('error', (err) => r.destroy(err));
      body.pipe(r);
    } else r.end(body);
  });
}

/** Reads a whole 2xx answer, at most `maxBytes` of it. */
export async function readAll(res: http.IncomingMessage, maxBytes: number, what: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      res.destroy();
      throw new SdkError(`${what}: the answer is over ${maxBytes} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** The media type of an answer, without parameters, lower case. */
export function mediaTypeOf(res: http.IncomingMessage): string {
  return (res.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
}
