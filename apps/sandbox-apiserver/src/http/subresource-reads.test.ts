import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger } from '@sandbox-scale/kube-runtime';
import { LocalVerbs } from '../peers/sandbox-verbs';
import { installStorages } from '../storage/install';
import { negotiate } from './negotiate';
import { requestInfoOf } from './request-info';
import { handleResource } from './resource-handler';
import { sendStatus } from './status';

const S = '/apis/agents.x-k8s.io/v1beta1/namespaces/team-a/sandboxes/s1';

/** What the storage answers each action with: the handler must pass it through untouched. */
const ANSWERS: Record<string, Record<string, unknown>> = {
  stats: { apiVersion: 'agents.x-k8s.io/v1beta1', kind: 'SandboxStats', cpuCount: 2, memUsedBytes: 1024, paused: false, nodeName: 'n1' },
  snapshots: { apiVersion: 'agents.x-k8s.io/v1beta1', kind: 'SandboxSnapshotList', metadata: {}, items: [{ snapshotID: 'cp_1' }] },
};

interface Reply {
  code: number;
  body: Record<string, unknown>;
}

// The handler over a real HTTP server and the real storage, whose `act` (the node call) is
// replaced by one that records its arguments: what a GET hands the storage is what is checked.
describe('stats and snapshots as GET', () => {
  let server: Server;
  const { sandboxes, byResource } = installStorages({
    clients: undefined,
    graceMs: 60_000,
    overlayTtlMs: 300_000,
    claimIndexMaxBytes: 1 << 20,
    watchHistory: 100,
    rng: Math.random,
    log: createLogger({ name: 'test', level: 'silent' }),
  });
  const act = jest.spyOn(sandboxes, 'act');

  beforeAll(async () => {
    sandboxes.routeThrough(new LocalVerbs(sandboxes));
    sandboxes.markSynced('1');
    act.mockImplementation(async (_ns, _name, action) => ANSWERS[action] ?? { kind: 'Other' });
    server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const info = requestInfoOf(req.method ?? 'GET', url);
      const storage = info.isResource ? byResource.get(info.resource) : undefined;
      const shape = negotiate(req.headers.accept);
      if (!info.isResource || storage === undefined || shape === undefined) {
        res.writeHead(404).end();
        return;
      }
      handleResource({ req, res, url, info, shape, storage, bookmarkIntervalMs: 60_000 }).catch((err: unknown) => sendStatus(res, err));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });

  beforeEach(() => act.mockClear());

  afterAll(async () => {
    sandboxes.stop();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  function call(method: string, path: string, body?: unknown): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const text = body === undefined ? undefined : JSON.stringify(body);
      const headers: Record<string, string> = { Accept: 'application/json' };
      // Node frames a GET's body only by a Content-Length it is given
      if (text !== undefined)
        Object.assign(headers, { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(text)) });
      const req = request({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, method, path, headers }, (res) => {
        let answer = '';
        res.on('data', (c: Buffer) => (answer += c.toString()));
        res.on('end', () =>
          resolve({ code: res.statusCode ?? 0, body: answer === '' ? {} : (JSON.parse(answer) as Record<string, unknown>) }),
        );
      });
      req.on('error', reject);
      req.end(text);
    });
  }

  it.each(['stats', 'snapshots'])('answers GET %s with 200 and the body POST answers with 201', async (sub) => {
    const get = await call('GET', `${S}/${sub}`);
    const post = await call('POST', `${S}/${sub}`, {});
    expect(get).toEqual({ code: 200, body: ANSWERS[sub] });
    expect(post).toEqual({ code: 201, body: ANSWERS[sub] });
    expect(act.mock.calls).toEqual([
      ['team-a', 's1', sub, undefined, false],
      ['team-a', 's1', sub, {}, false],
    ]);
  });

  it('hands a GET neither its body nor its query: no dryRun, no options reach the storage', async () => {
    const r = await call('GET', `${S}/snapshots?dryRun=All&snapshot=cp_1&action=deletesnapshot`, {
      kind: 'SandboxDeleteSnapshotOptions',
      snapshot: 'cp_1',
    });
    expect(r).toEqual({ code: 200, body: ANSWERS['snapshots'] });
    expect(act.mock.calls).toEqual([['team-a', 's1', 'snapshots', undefined, false]]);
  });

  it('refuses a GET of an action that acts, and other methods of the reads, with 405 before the storage is called', async () => {
    for (const sub of ['pause', 'resume', 'fork', 'snapshot', 'deletesnapshot', 'claimsnapshot', 'promote'])
      expect(await call('GET', `${S}/${sub}`)).toMatchObject({
        code: 405,
        body: { kind: 'Status', reason: 'MethodNotAllowed', message: `GET is not supported on sandboxes/${sub}` },
      });
    for (const method of ['PUT', 'PATCH', 'DELETE'])
      expect(await call(method, `${S}/stats`, {})).toMatchObject({ code: 405, body: { reason: 'MethodNotAllowed' } });
    expect(act).not.toHaveBeenCalled();
  });
});
