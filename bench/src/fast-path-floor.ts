/**
 * The floor of a fast path written in Node, on this machine, for bench:fast-path: an HTTPS
 * server that answers POST /v1/claims by reading the body, claiming a VM at a node over the same
 * kept-alive client the gateway uses (SandboxdClientSet), and writing the node's answer back. No
 * identity, no authorization, no node choice beyond taking the nodes in turn, no name
 * reservation, no record: only the two hops and the two encodings any fast path makes. It runs
 * as its own process, as claim-controller does, so the bench measures both the same way.
 *
 * Reads FLOOR_NODES (comma-separated sandboxd base URLs) and FLOOR_TOKENS (each node's root token, in the same order);
 * prints one JSON line, `{"port": ..., "ca": "..."}`, once it listens; ends on SIGTERM.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { readRequestBody, selfSignedCert, sendJson } from '@sandbox-scale/kube-runtime';
import { normalizeBaseUrl, SandboxdClientSet } from '@sandbox-scale/sandboxd-client';

interface FloorClaim {
  namespace: string;
  name: string;
  template: string;
}

async function main(): Promise<void> {
  const nodes = (process.env.FLOOR_NODES ?? '').split(',').filter((u) => u !== '');
  if (nodes.length === 0) throw new Error('FLOOR_NODES names no node');
  const tokens = (process.env.FLOOR_TOKENS ?? '').split(',');
  // each node's own root token, looked up per call as the gateway's per-node tokens are
  const byUrl = new Map(nodes.map((u, i) => [normalizeBaseUrl(u), tokens[i] ?? '']));
  const clients = new SandboxdClientSet({ tokenFor: (url) => byUrl.get(normalizeBaseUrl(url)) ?? '' });
  const targets = nodes.map((u) => clients.forNode(u));
  let turn = 0;
  // the body read as the fast path reads it, then one claim at the next node in turn
  const answer = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = (await readRequestBody(req, { maxBytes: 64 * 1024 })) as FloorClaim;
    const node = targets[turn++ % targets.length];
    if (node === undefined) throw new Error('no node');
    const c = await node.claim({
      template: body.template,
      net: 'none',
      size: 'small',
      ttlSeconds: 3600,
      claimRef: `bench/floor-${body.name}`,
    });
    sendJson(res, 200, {
      kind: 'Assignment',
      namespace: body.namespace,
      name: body.name,
      claimId: c.id,
      node: c.nodeUrl,
      address: c.ownerAddr,
      token: c.token,
    });
  };
  const tls = await selfSignedCert({ commonName: 'localhost', dnsNames: ['localhost'], ips: ['127.0.0.1'] });
  const server = createServer({ cert: tls.cert, key: tls.key, noDelay: true }, (req, res) => {
    answer(req, res).catch((err: unknown) => sendJson(res, 503, { message: err instanceof Error ? err.message : String(err) }));
  });
  server.listen(0, '127.0.0.1', () => {
    process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port, ca: tls.caBundle })}\n`);
  });
  process.once('SIGTERM', () => {
    server.close();
    server.closeAllConnections();
    void clients.close();
  });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
