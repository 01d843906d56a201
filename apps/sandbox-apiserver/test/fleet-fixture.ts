import { request } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { applyObject, createLogger } from '@sandbox-scale/kube-runtime';
import { EXTENSIONS_API_VERSION, servedNameOf } from '@sandbox-scale/scale-core';
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
 * GET /v1/info) — what the inventory publisher does, done by the test.
 */
export async function publishInventories(kc: KubeConfig, nodes: readonly SimNodeRef[], token: string, suffix: string): Promise<void> {
  for (const n of nodes) {
    const client = new SandboxdClient({ baseUrl: n.url, token });
    const [rows, info] = await Promise.all([client.sandboxes(), client.info()]);
    await client.close();
    const name = `${n.name}-${suffix}`;
    const entries = rows.map((r) => ({
      name: servedNameOf(r.claimRef) ?? `default/${r.id}`,
      id: r.id,
      phase: r.hibernated ? 'Paused' : 'Running',
      ...(r.claimRef ? { claimRef: r.claimRef } : {}),
      ...(r.deadline ? { deadline: r.deadline.toISOString() } : {}),
      ...(r.claimedAt ? { claimedAt: r.claimedAt.toISOString() } : {}),
    }));
    const pools = info.pools.map((p) => ({ template: p.key.template, net: p.key.net, size: p.key.size, warm: p.warm, target: p.target }));
    await applyObject(kc, { apiVersion: EXTENSIONS_API_VERSION, kind: 'NodeInventory', metadata: { name }, node: name, address: n.addr, entries, pools }, { fieldManager: 'sandbox-scale/test-publisher', force: true, resource: NODE_INVENTORY_RESOURCE });
  }
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
      { hostname: u.hostname, port: u.port, path: `${u.pathname}${u.search}`, method: opts.method ?? 'GET', ca: opts.ca, servername: 'localhost', headers: { 'Content-Type': 'application/json', Accept: 'application/json' }, ...https },
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
