import { request } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { applyObject, createLogger } from '@sandbox-scale/kube-runtime';
import { buildInventory } from '@sandbox-scale/inventory-publisher';
import { NodeInventorySchema, parseObject, type NodeInventory } from '@sandbox-scale/scale-core';
import { SandboxdClient } from '@sandbox-scale/sandboxd-client';
import { NODE_INVENTORY_RESOURCE } from '../src/storage/inventory-informer';

export const quietLog = createLogger({ name: 'sandbox-apiserver-test', level: 'silent' });

export interface SimNodeRef {
  readonly name: string;
  readonly url: string;
  readonly addr: string;
}

/**
 * Writes one NodeInventory per simulated node from what sandboxd reports (GET /v1/sandboxes,
 * GET /v1/info), built by the inventory publisher's own buildInventory: the objects are the
 * publisher's output, phases and all, not a copy of it written for the test.
 */
export async function publishInventories(kc: KubeConfig, nodes: readonly SimNodeRef[], token: string, suffix: string): Promise<void> {
  for (const n of nodes) {
    const client = new SandboxdClient({ baseUrl: n.url, token });
    const [rows, info] = await Promise.all([client.sandboxes(), client.info()]);
    await client.close();
    const body = buildInventory({ node: `${n.name}-${suffix}`, address: n.addr, rows, info, now: new Date() });
    await applyObject(kc, body, { fieldManager: 'sandbox-scale/test-publisher', force: true, resource: NODE_INVENTORY_RESOURCE });
  }
}

/**
 * The NodeInventory the publisher would write for a node right now (optionally only the given
 * sandbox ids), as the informer would hand it to the view.
 */
export async function publishedInventory(
  client: SandboxdClient,
  node: string,
  address: string,
  ids?: ReadonlySet<string>,
): Promise<NodeInventory> {
  const [rows, info] = await Promise.all([client.sandboxes(), client.info()]);
  const body = buildInventory({ node, address, rows: ids === undefined ? rows : rows.filter((r) => ids.has(r.id)), info, now: new Date() });
  return parseObject(NodeInventorySchema, { ...body, metadata: { ...body.metadata, resourceVersion: '1' } });
}

export interface RawReply {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

/** A direct HTTPS call to the server (bypassing kube-apiserver), with kc's client credentials or none. */
export function direct(url: string, opts: { method?: string; body?: unknown; kc?: KubeConfig; ca: string }): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const https: { cert?: string | Buffer; key?: string | Buffer } = {};
    if (opts.kc) {
      const user = opts.kc.getCurrentUser();
      if (user?.certData) https.cert = Buffer.from(user.certData, 'base64');
      if (user?.keyData) https.key = Buffer.from(user.keyData, 'base64');
    }
    const req = request(
      {
        hostname: u.hostname,
        port: u.port,
        path: `${u.pathname}${u.search}`,
        method: opts.method ?? 'GET',
        ca: opts.ca,
        servername: 'localhost',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        ...https,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(opts.body === undefined ? undefined : JSON.stringify(opts.body));
  });
}
