import type { KubeConfig } from '@kubernetes/client-node';
import { EXTENSIONS_API_VERSION } from '@sandbox-scale/scale-core';
import { request, type RequestOptions } from 'node:https';

/** What kube-apiserver answered a NodeInventory write: the HTTP status and, on a refusal, its Status message. */
export interface WriteAnswer {
  status: number;
  message: string;
}

export type InventoryWrite =
  /** A server-side apply of `body` (creates the object when missing), as the publisher writes. */
  | { op: 'apply'; name: string; body: Record<string, unknown> }
  /** A JSON merge patch of an existing object. */
  | { op: 'merge'; name: string; patch: Record<string, unknown> }
  | { op: 'delete'; name: string };

const PATH = `/apis/${EXTENSIONS_API_VERSION}/nodeinventories`;

/** The body of a NodeInventory `name` that says it is node `node`'s (a part when `part` is given). */
export function inventoryBody(name: string, node: string, part?: number): Record<string, unknown> {
  return {
    apiVersion: EXTENSIONS_API_VERSION,
    kind: 'NodeInventory',
    metadata: { name },
    node,
    ...(part === undefined ? {} : { part }),
  };
}

/**
 * Sends one NodeInventory write with the credentials of `kc` (a token kubeconfig), straight over
 * HTTPS so the status code and the admission message come back exactly as kube-apiserver sent them.
 */
export async function writeInventory(kc: KubeConfig, w: InventoryWrite, fieldManager = 'sandbox-scale-test'): Promise<WriteAnswer> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  const u = new URL(`${cluster.server}${PATH}/${encodeURIComponent(w.name)}`);
  const [method, contentType, body] =
    w.op === 'apply'
      ? ['PATCH', 'application/apply-patch+yaml', JSON.stringify(w.body)]
      : w.op === 'merge'
        ? ['PATCH', 'application/merge-patch+json', JSON.stringify(w.patch)]
        : ['DELETE', 'application/json', undefined];
  if (w.op === 'apply') u.search = `?fieldManager=${encodeURIComponent(fieldManager)}&force=true`;
  const opts: RequestOptions = {
    hostname: u.hostname,
    port: u.port,
    path: `${u.pathname}${u.search}`,
    method,
    headers: { Accept: 'application/json', 'Content-Type': contentType },
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
    req.end(body);
  });
}
