import type { KubeConfig } from '@kubernetes/client-node';
import { request, type RequestOptions } from 'node:https';

/** What kube-apiserver answered a request: the HTTP status and, on a refusal, its Status message. */
export interface WriteAnswer {
  status: number;
  message: string;
}

export interface KubeRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Path and query, e.g. `/api/v1/namespaces/a/secrets`. */
  path: string;
  contentType?: string;
  body?: string;
}

/**
 * Sends one request with the credentials of `kc` (a token kubeconfig), straight over HTTPS so
 * the status code and the admission message come back exactly as kube-apiserver sent them.
 */
export async function sendAs(kc: KubeConfig, r: KubeRequest): Promise<WriteAnswer> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  const u = new URL(`${cluster.server}${r.path}`);
  const opts: RequestOptions = {
    hostname: u.hostname,
    port: u.port,
    path: `${u.pathname}${u.search}`,
    method: r.method,
    headers: { Accept: 'application/json', 'Content-Type': r.contentType ?? 'application/json' },
  };
  await kc.applyToHTTPSOptions(opts);
  return new Promise((resolve, reject) => {
    const req = request(opts, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        const status = res.statusCode ?? 0;
        let message = '';
        try {
          const parsed = JSON.parse(text) as { kind?: unknown; message?: unknown };
          if (parsed.kind === 'Status' && typeof parsed.message === 'string') message = parsed.message;
        } catch {
          message = text;
        }
        resolve({ status, message });
      });
    });
    req.on('error', reject);
    req.end(r.body);
  });
}
