import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { UserInfo } from '@sandbox-scale/kube-runtime';
import { captureLog } from '@sandbox-scale/kube-runtime/testing';
import { INVENTORY_SEQ_ANNOTATION, MAX_NOTICE_BYTES, NODE_NOTICE_PATH, type NodeInventory } from '@sandbox-scale/scale-core';
import { sendStatus } from '../http/status';
import { NodeNotices } from './node-notices';
import { NODE_NAME_EXTRA } from './notice-auth';
import { seqOf, supersede } from './node-view';

const PUBLISHER = 'system:serviceaccount:sandbox-system:publisher';
/** Token -> user, as TokenReview would answer (a fake of the one call the endpoint makes). */
const users: Record<string, UserInfo> = {
  'tok-n1': { username: PUBLISHER, groups: [], extra: { [NODE_NAME_EXTRA]: ['n1'] } },
};

/** The cache surface the endpoint uses, over one node's view. */
class OneNodeCache {
  view: NodeInventory | undefined = {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'NodeInventory',
    metadata: { name: 'n1', annotations: { [INVENTORY_SEQ_ANNOTATION]: '100' } },
    node: 'n1',
    entries: [{ name: 'a/s1', id: 'sb_1', phase: 'Running' }],
  };
  admit: (next: NodeInventory, current: NodeInventory | undefined) => NodeInventory = (next) => next;
  inventory(node: string): NodeInventory | undefined {
    return node === 'n1' ? this.view : undefined;
  }
  upsertInventory(inv: NodeInventory): void {
    this.view = this.admit(inv, this.view);
  }
}

let server: Server;
let port: number;
let cache: OneNodeCache;

beforeAll(async () => {
  cache = new OneNodeCache();
  const notices = new NodeNotices({
    cache,
    auth: { authenticateToken: (t: string) => Promise.resolve(users[t]) },
    publisher: PUBLISHER,
    log: captureLog().log,
  });
  server = createServer((req, res) => {
    notices.serve(req, res).catch((err: unknown) => sendStatus(res, err));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  port = (server.address() as AddressInfo).port;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

function post(token: string, body: string | Buffer): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: NODE_NOTICE_PATH,
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('the notice endpoint', () => {
  it('takes the node publisher SA notices from the node its token names, and answers 409 for a delta over an older view', async () => {
    expect(cache.admit).toBe(supersede);
    const ok = await post(
      'tok-n1',
      JSON.stringify({ node: 'n1', seq: 200, base: 100, entries: [{ name: 'a/s1', id: 'sb_1', phase: 'Paused' }] }),
    );
    expect(ok).toEqual({ status: 200, body: '{"applied":true}' });
    expect(seqOf(cache.view)).toBe(200);
    expect(cache.view?.entries?.[0]?.phase).toBe('Paused');
    const late = await post('tok-n1', JSON.stringify({ node: 'n1', seq: 150, base: 100, entries: [] }));
    expect(late).toEqual({ status: 200, body: '{"applied":false}' });
    const gap = await post('tok-n1', JSON.stringify({ node: 'n1', seq: 400, base: 300, entries: [] }));
    expect(gap.status).toBe(409);
    expect(JSON.parse(gap.body)).toMatchObject({ kind: 'Status', reason: 'Conflict' });
  });

  it('refuses unknown tokens, other nodes and bad bodies with a Status, and keeps serving', async () => {
    expect((await post('nobody', '{}')).status).toBe(401);
    const other = await post('tok-n1', JSON.stringify({ node: 'n2', seq: 500, entries: [] }));
    expect(other.status).toBe(403);
    expect(other.body).toContain('cannot tell of node \\"n2\\"');
    expect((await post('tok-n1', 'not json')).status).toBe(400);
    const extra = await post('tok-n1', JSON.stringify({ node: 'n1', seq: 500, entries: [], owner: 'x' }));
    expect(extra.status).toBe(422);
    const big = await post('tok-n1', Buffer.alloc(MAX_NOTICE_BYTES + 1, 0x20));
    expect(big.status).toBe(400);
    expect(big.body).toContain(`larger than ${MAX_NOTICE_BYTES} bytes`);
    // a key naming a prototype, and a sequence no clock can be at: 422s naming the field
    const proto = await post('tok-n1', '{"node":"n1","seq":500,"entries":[{"name":"a/s1","__proto__":{"phase":"x"}}]}');
    expect(proto.status).toBe(422);
    expect(proto.body).toContain('entries[0].__proto__');
    const ahead = await post('tok-n1', JSON.stringify({ node: 'n1', seq: Number.MAX_SAFE_INTEGER, entries: [] }));
    expect(ahead.status).toBe(422);
    expect(JSON.parse(ahead.body)).toMatchObject({ reason: 'Invalid', details: { causes: [{ field: 'seq' }] } });
    expect(seqOf(cache.view)).toBe(200);
    expect((await post('tok-n1', JSON.stringify({ node: 'n1', seq: 600, entries: [] }))).body).toBe('{"applied":true}');
    expect(cache.view?.entries).toBeUndefined();
  });
});
