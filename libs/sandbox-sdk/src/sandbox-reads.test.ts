import { once } from 'node:events';
import * as http from 'node:http';
import { KubeConfig } from '@kubernetes/client-node';
import { isForbidden, type ApiError } from './errors';
import { Sandbox } from './sandbox';

// stats and snapshots are reads: sent as GET (RBAC verb get, which the view role grants), with
// no body; the lifecycle verbs that act stay POSTs with their options kind. Checked on the wire
// against a loopback stand-in for kube-apiserver.

interface Seen {
  method: string;
  path: string;
  contentType: string;
  body: string;
}

const BASE = '/apis/agents.x-k8s.io/v1beta1/namespaces/team/sandboxes/sb';

let server: http.Server;
let seen: Seen[];
let answer: (r: Seen) => { code: number; body: unknown };
let sb: Sandbox;

beforeEach(async () => {
  seen = [];
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r = {
        method: req.method ?? '',
        path: req.url ?? '',
        contentType: req.headers['content-type'] ?? '',
        body: Buffer.concat(chunks).toString('utf8'),
      };
      seen.push(r);
      const a = answer(r);
      res.writeHead(a.code, { 'Content-Type': 'application/json' }).end(JSON.stringify(a.body));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  sb = new Sandbox(kc, { name: 'sb', namespace: 'team', node: '', address: '', token: '', via: 'existing' });
});

afterEach(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('Sandbox reads', () => {
  it('GETs stats and snapshots with no body, and POSTs pause with its options kind', async () => {
    answer = (r) => {
      if (r.path.endsWith('/stats')) return { code: 200, body: { kind: 'SandboxStats', cpuCount: 2, paused: false, nodeName: 'n1' } };
      if (r.path.endsWith('/snapshots')) return { code: 200, body: { kind: 'SandboxSnapshotList', items: [{ snapshotID: 'cp_1' }] } };
      return { code: 201, body: { kind: 'SandboxPauseOptions' } };
    };
    expect(await sb.stats()).toMatchObject({ cpuCount: 2, paused: false, nodeName: 'n1' });
    expect((await sb.snapshots()).map((s) => s.snapshotID)).toEqual(['cp_1']);
    await sb.pause();
    expect(seen.map((r) => ({ method: r.method, path: r.path, body: r.body }))).toEqual([
      { method: 'GET', path: `${BASE}/stats`, body: '' },
      { method: 'GET', path: `${BASE}/snapshots`, body: '' },
      {
        method: 'POST',
        path: `${BASE}/pause`,
        body: JSON.stringify({ apiVersion: 'agents.x-k8s.io/v1beta1', kind: 'SandboxPauseOptions' }),
      },
    ]);
  });

  it('names the get verb when a read is forbidden', async () => {
    answer = () => ({
      code: 403,
      body: { kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 403, reason: 'Forbidden', message: 'no' },
    });
    const err = await sb.stats().catch((e: unknown) => e);
    expect(isForbidden(err)).toBe(true);
    expect((err as ApiError).target).toMatchObject({ verb: 'get', resource: 'sandboxes/stats', namespace: 'team', name: 'sb' });
    expect((err as Error).message).toContain('cannot get sandboxes/stats.agents.x-k8s.io "sb" in namespace "team"');
  });
});
