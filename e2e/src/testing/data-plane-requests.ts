import type { KubeConfig } from '@kubernetes/client-node';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { request, type RequestOptions } from 'node:https';
import type { Socket } from 'node:net';

/** A reply as it came: status, headers and the whole body. */
export interface RawReply {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface RawRequest {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';
  /** Path and query. */
  path: string;
  headers?: Record<string, string>;
  /** A body, sent whole (with its Content-Length), or in chunks (chunked, no Content-Length). */
  body?: Buffer | string | Buffer[];
}

/** The HTTPS options of a request to the cluster of `kc` with its credentials (a tenant's token, the admin's certificate). */
async function optionsOf(kc: KubeConfig, method: string, path: string, headers: Record<string, string>): Promise<RequestOptions> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  const u = new URL(`${cluster.server}${path}`);
  const opts: RequestOptions = { hostname: u.hostname, port: u.port, path: `${u.pathname}${u.search}`, method, headers: { ...headers } };
  await kc.applyToHTTPSOptions(opts);
  return opts;
}

/** One request through kube-apiserver as `kc`, the reply read whole. */
export async function kubeRaw(kc: KubeConfig, r: RawRequest): Promise<RawReply> {
  const opts = await optionsOf(kc, r.method, r.path, r.headers ?? {});
  opts.agent = false;
  return new Promise((resolve, reject) => {
    const req = request(opts, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    if (Array.isArray(r.body)) {
      for (const part of r.body) req.write(part);
      req.end();
    } else req.end(r.body);
  });
}

/** The JSON of a reply (a Status on failure). */
/** A long response through kube-apiserver as `kc` (a watch), its body left for the caller to read. */
export async function kubeStream(kc: KubeConfig, path: string): Promise<IncomingMessage> {
  const opts = await optionsOf(kc, 'GET', path, {});
  opts.agent = false;
  return new Promise((resolve, reject) => {
    const req = request(opts, resolve);
    req.on('error', reject);
    req.end();
  });
}

export function jsonOf<T = Record<string, unknown>>(r: RawReply): T {
  return JSON.parse(r.body.toString('utf8')) as T;
}

export type UpgradeOutcome = { upgraded: true; socket: Socket; headers: IncomingHttpHeaders } | { upgraded: false; reply: RawReply };

/**
 * An upgrade request (`Connection: Upgrade`, `Upgrade: tcp`) through kube-apiserver as `kc`, as
 * kubectl-like clients send it: the raw socket after a 101, else the refusal read whole.
 */
export async function kubeUpgrade(kc: KubeConfig, method: 'GET' | 'POST', path: string): Promise<UpgradeOutcome> {
  const opts = await optionsOf(kc, method, path, { Connection: 'Upgrade', Upgrade: 'tcp' });
  opts.agent = false;
  return new Promise((resolve, reject) => {
    const req = request(opts);
    req.on('upgrade', (res, socket: Socket, head: Buffer) => {
      if (head.length > 0) socket.unshift(head);
      resolve({ upgraded: true, socket, headers: res.headers });
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ upgraded: false, reply: { status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) } }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

/** Writes `send` on a relayed socket (ending the writing side when `halfClose`) and reads until the far end closes. */
export function exchange(socket: Socket, send: string | Buffer, opts: { halfClose?: boolean } = {}): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('end', () => {
      resolve(Buffer.concat(chunks));
      socket.destroy();
    });
    socket.on('error', reject);
    if (opts.halfClose) socket.end(send);
    else socket.write(send);
  });
}
