import { E2bApiError, serveControlPlane, type E2bBackend, type E2bSandbox } from './control-plane-api';

const identity = { envdVersion: '0.5.7', envdAccessToken: (id: string) => `token-of-${id}`, clientID: 'sandbox-scale' };
const at = new Date('2026-12-07T00:00:00Z');
const sandbox = (id: string, state: 'running' | 'paused' = 'running'): E2bSandbox => ({
  sandboxID: id,
  templateID: 'python-agent',
  state,
  startedAt: at,
  endAt: new Date(at.getTime() + 300_000),
  metadata: { app: 'x' },
  cpuCount: 1,
  memoryMB: 1024,
  diskSizeMB: 2048,
});

function backend(over: Partial<E2bBackend> = {}): E2bBackend & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    create: async (r) => (calls.push(`create ${r.templateID} ${r.timeoutSeconds}`), sandbox('sb-1')),
    get: async (id) => (id === 'sb-1' ? sandbox(id) : undefined),
    list: async (f) => (calls.push(`list ${f.states.join(',')}`), { items: [sandbox('sb-1'), sandbox('sb-2', 'paused')], nextToken: 'n2' }),
    kill: async (id) => id === 'sb-1',
    setTimeout: async (id, s) => void calls.push(`timeout ${id} ${s}`),
    pause: async (id) => id === 'sb-1',
    connect: async (id) => ({ sandbox: sandbox(id), resumed: id === 'sb-2' }),
    snapshot: async (_id, name) => ({ snapshotID: 'snap-1', names: name ? [name] : [] }),
    listSnapshots: async (id) => (
      calls.push(`snapshots ${id ?? '*'}`),
      [
        { snapshotID: 'snap-1', names: ['a'] },
        { snapshotID: 'snap-2', names: ['b'] },
      ]
    ),
    deleteSnapshot: async (id) => id === 'snap-1',
    metrics: async () => [
      {
        timestamp: at.toISOString(),
        timestampUnix: at.getTime() / 1000,
        cpuCount: 1,
        cpuUsedPct: 0,
        memUsed: 1,
        memTotal: 2,
        memCache: 0,
        diskUsed: 0,
        diskTotal: 0,
      },
    ],
    fork: async (id, count, timeout) => (
      calls.push(`fork ${id} ${count} ${timeout}`),
      Array.from({ length: count }, (_, i) => sandbox(`${id}-sb-${i}`))
    ),
    ...over,
  };
}

const req = (method: string, path: string, body?: unknown, query = '') => ({ method, path, query: new URLSearchParams(query), body });

describe('the e2b control plane', () => {
  it('creates with 201 and the fields Python requires, the default timeout 300 s', async () => {
    const b = backend();
    const r = await serveControlPlane(b, identity, req('POST', '/v2/sandboxes', { templateID: 'python-agent', metadata: {}, envVars: {} }));
    expect(r).toEqual({
      status: 201,
      body: {
        sandboxID: 'sb-1',
        templateID: 'python-agent',
        clientID: 'sandbox-scale',
        envdVersion: '0.5.7',
        envdAccessToken: 'token-of-sb-1',
        trafficAccessToken: null,
        domain: null,
      },
    });
    expect(b.calls).toEqual(['create python-agent 300']);
    expect((await serveControlPlane(b, identity, req('POST', '/sandboxes', { templateID: 't', timeout: 60 }))).status).toBe(201);
  });

  it('lists with the required set and the next token, and gets one', async () => {
    const r = await serveControlPlane(backend(), identity, req('GET', '/v2/sandboxes', undefined, 'state=running,paused'));
    expect(r.status).toBe(200);
    expect(r.headers).toEqual({ 'x-next-token': 'n2' });
    expect((r.body as { state: string }[]).map((s) => s.state)).toEqual(['running', 'paused']);
    const got = await serveControlPlane(backend(), identity, req('GET', '/sandboxes/sb-1'));
    expect(got.body).toMatchObject({
      sandboxID: 'sb-1',
      startedAt: '2026-12-07T00:00:00.000Z',
      endAt: '2026-12-07T00:05:00.000Z',
      state: 'running',
      diskSizeMB: 2048,
    });
  });

  it('answers the statuses the SDKs decide by: kill 204/404, pause 204/409, connect 200/201', async () => {
    const b = backend();
    expect(await serveControlPlane(b, identity, req('DELETE', '/sandboxes/sb-1'))).toEqual({ status: 204 });
    expect(await serveControlPlane(b, identity, req('DELETE', '/sandboxes/nope'))).toEqual({
      status: 404,
      body: { code: 404, message: 'sandbox "nope" not found' },
    });
    expect((await serveControlPlane(b, identity, req('POST', '/sandboxes/sb-1/pause', {}))).status).toBe(204);
    expect(await serveControlPlane(b, identity, req('POST', '/sandboxes/sb-9/pause', {}))).toEqual({
      status: 409,
      body: { code: 409, message: 'sandbox "sb-9" is already paused' },
    });
    expect((await serveControlPlane(b, identity, req('POST', '/v2/sandboxes/sb-1/connect', {}))).status).toBe(200);
    expect((await serveControlPlane(b, identity, req('POST', '/v2/sandboxes/sb-2/connect', { timeout: 60 }))).status).toBe(201);
    expect(await serveControlPlane(b, identity, req('POST', '/sandboxes/sb-1/timeout', { timeout: 120 }))).toEqual({ status: 204 });
    expect(b.calls).toContain('timeout sb-1 120');
  });

  it('refuses what it cannot honour, and malformed bodies, with 400 and the field', async () => {
    const b = backend();
    expect(await serveControlPlane(b, identity, req('POST', '/v2/sandboxes', { templateID: 't', autoResume: { enabled: true } }))).toEqual({
      status: 400,
      body: { code: 400, message: 'not supported here: autoResume' },
    });
    expect(
      await serveControlPlane(
        b,
        identity,
        req('POST', '/v2/sandboxes', { templateID: 't', autoPause: true, allow_internet_access: false }),
      ),
    ).toEqual({
      status: 400,
      body: {
        code: 400,
        message:
          'not supported here: autoPause (a sandbox past its timeout is released, not paused), allow_internet_access:false (no egress rules are enforced here)',
      },
    });
    expect((await serveControlPlane(b, identity, req('POST', '/v2/sandboxes', { templateID: 't', autoPause: false }))).status).toBe(201);
    const bad = await serveControlPlane(b, identity, req('POST', '/sandboxes/sb-1/timeout', { timeout: 'soon' }));
    expect(bad.status).toBe(400);
    expect((bad.body as { message: string }).message).toMatch(/^invalid request body: timeout: /);
    expect((await serveControlPlane(b, identity, req('GET', '/v2/sandboxes', undefined, 'limit=0'))).status).toBe(400);
    expect(b.calls).toEqual(['create t 300']);
  });

  it('says not to retry a create that failed after it may have acted, and passes Retry-After on', async () => {
    const failing = backend({
      create: () => Promise.reject(new Error('node gone mid-claim')),
      get: () => Promise.reject(new E2bApiError(503, 'no warm capacity', 2)),
    });
    const r = await serveControlPlane(failing, identity, req('POST', '/v2/sandboxes', { templateID: 't' }));
    expect({ status: r.status, body: r.body, headers: r.headers, logged: (r.unexpected as Error).message }).toEqual({
      status: 500,
      body: { code: 500, message: 'internal error' },
      headers: { 'should-retry': 'false' },
      logged: 'node gone mid-claim',
    });
    expect(await serveControlPlane(failing, identity, req('GET', '/sandboxes/x'))).toEqual({
      status: 503,
      body: { code: 503, message: 'no warm capacity' },
      headers: { 'retry-after': '2' },
    });
  });

  it('forks into replies of their own, reads metrics, and lists and deletes snapshots', async () => {
    const b = backend();
    const fork = await serveControlPlane(b, identity, req('POST', '/sandboxes/sb-1/fork', { count: 2 }));
    expect(fork.status).toBe(201);
    expect((fork.body as { sandbox: { sandboxID: string; envdAccessToken: string } }[]).map((c) => c.sandbox.sandboxID)).toEqual([
      'sb-1-sb-0',
      'sb-1-sb-1',
    ]);
    const metrics = await serveControlPlane(b, identity, req('GET', '/sandboxes/sb-1/metrics', undefined, 'start=1&end=2'));
    expect(metrics.status).toBe(200);
    expect(Object.keys((metrics.body as object[])[0] ?? {}).sort()).toEqual(
      ['cpuCount', 'cpuUsedPct', 'diskTotal', 'diskUsed', 'memCache', 'memTotal', 'memUsed', 'timestamp', 'timestampUnix'].sort(),
    );
    const listed = await serveControlPlane(b, identity, req('GET', '/snapshots', undefined, 'sandboxID=sb-1&name=b'));
    expect(listed).toEqual({ status: 200, body: [{ snapshotID: 'snap-2', names: ['b'] }] });
    expect(await serveControlPlane(b, identity, req('DELETE', '/templates/snap-1'))).toEqual({ status: 204 });
    expect((await serveControlPlane(b, identity, req('DELETE', '/templates/snap-9'))).status).toBe(404);
    expect(b.calls).toEqual(['fork sb-1 2 300', 'snapshots sb-1']);
  });

  it('answers 404 with a body for paths and methods it does not serve', async () => {
    for (const [m, p] of [
      ['GET', '/nope'],
      ['PUT', '/sandboxes/sb-1'],
      ['GET', '/v2/sandboxes/sb-1'],
      ['POST', '/sandboxes/%E0%A4%A/pause'],
    ] as const)
      expect((await serveControlPlane(backend(), identity, req(m, p))).status).toBe(404);
  });
});
