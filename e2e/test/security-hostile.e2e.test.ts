import { CustomObjectsApi } from '@kubernetes/client-node';
import { request as httpRequest, type OutgoingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { eventually, runSuffix } from '../src/index';
import { MAX_WATCHES_PER_USER } from '../src/installed/installed-values';
import { startSuiteSystem } from '../src/system/suite-system';
import type { SystemUnderTest } from '../src/system/system-under-test';
import { sandboxdCounters } from '../src/testing/sandboxd';
import { grantTenantRole } from '../src/testing/tenant-role';

// Hostile requests against every HTTP server of the system — sandbox-apiserver directly and
// through kube-apiserver, the fast path, the probe/metrics listeners and the simulated nodes:
// malformed percent-encoding, odd methods, paths and queries, repeated, oversized and hostile
// headers, bad media types and malformed bodies, raw request lines and slow clients. Nothing
// may end a process, answer 5xx, hang, or write anything.

const ns = `t-hostile-${runSuffix()}`;
const GROUP = 'extensions.agents.x-k8s.io';
const VERSION = 'v1beta1';
const POOL = 'agent';
const IMAGE = 'ghcr.io/example/hostile-agent:1.0';
const WATCHES_PER_USER = MAX_WATCHES_PER_USER;
/** One hostile request gets this long to be answered or closed; past it, it counts as hung. */
const REPLY_TIMEOUT_MS = 20_000;
const CONCURRENCY = 8;

let sys: SystemUnderTest;
let clientToken = '';
let ca = '';
const probes = new Map<string, string>();
/** The apps' HTTPS metrics listeners (base URLs), and the reader token a scraper legitimately sends them. */
const metricsBases = new Map<string, string>();
let readerToken = '';

interface Target {
  readonly name: string;
  readonly base: string;
  readonly tls: boolean;
  /** The header a legitimate caller of this server authenticates with. */
  readonly auth: Record<string, string>;
  /** Paths the server serves, as a starting point for mutations. */
  readonly paths: readonly string[];
  /** Decodes any JSON body whatever its media type (sandboxd does): a well-formed `{}` would be a real call there. */
  readonly lenientJson?: boolean;
  /** Protocol-level garbage and slow clients; off for kube-apiserver, whose HTTP server is not the project's. */
  readonly raw: boolean;
}

interface Hostile {
  readonly method: string;
  readonly path: string;
  readonly headers?: OutgoingHttpHeaders;
  readonly body?: string | Buffer;
}

type Outcome = { kind: 'status'; status: number } | { kind: 'closed' } | { kind: 'hung' };

function isClosedCleanly(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code ?? '';
  // the server answered and closed before the whole body was sent, or refused the request outright
  return (
    ['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'HPE_INVALID_CONSTANT', 'ERR_STREAM_WRITE_AFTER_END'].includes(code) ||
    /socket hang up|aborted/i.test(String(err))
  );
}

function send(t: Target, h: Hostile): Promise<Outcome> {
  return new Promise((resolve) => {
    const u = new URL(t.base);
    const request = t.tls ? httpsRequest : httpRequest;
    let settled = false;
    const done = (o: Outcome): void => {
      if (settled) return;
      settled = true;
      resolve(o);
    };
    try {
      const req = request(
        {
          host: u.hostname,
          port: u.port,
          method: h.method,
          path: h.path,
          headers: h.headers ?? {},
          ...(t.tls ? { ca, servername: 'localhost', rejectUnauthorized: false } : {}),
          agent: false,
        },
        (res) => {
          // the status line is the answer; the body (a watch streams until its timeout) is not needed
          done({ kind: 'status', status: res.statusCode ?? 0 });
          res.destroy();
        },
      );
      req.setTimeout(REPLY_TIMEOUT_MS, () => {
        done({ kind: 'hung' });
        req.destroy();
      });
      req.on('error', (err) => done(isClosedCleanly(err) ? { kind: 'closed' } : { kind: 'hung' }));
      req.end(h.body);
    } catch {
      // the client refused to send it (an invalid header value): nothing reached the server
      done({ kind: 'closed' });
    }
  });
}

/** Writes raw bytes (no client-side validation) and reads what the server says before closing. */
function sendRaw(t: Target, bytes: string | Buffer, timeoutMs = REPLY_TIMEOUT_MS): Promise<Outcome> {
  return new Promise((resolve) => {
    const u = new URL(t.base);
    const port = Number(u.port);
    const socket: Socket = t.tls
      ? tlsConnect({ host: u.hostname, port, ca, servername: 'localhost', rejectUnauthorized: false })
      : netConnect(port, u.hostname);
    let reply = '';
    let settled = false;
    const done = (o: Outcome): void => {
      if (settled) return;
      settled = true;
      socket.destroy();
      resolve(o);
    };
    socket.once(t.tls ? 'secureConnect' : 'connect', () => socket.write(bytes));
    socket.setEncoding('latin1');
    socket.on('data', (c: string) => {
      reply += c;
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(reply);
      if (m) done({ kind: 'status', status: Number(m[1]) });
    });
    socket.on('close', () => done({ kind: 'closed' }));
    socket.on('error', () => done({ kind: 'closed' }));
    socket.setTimeout(timeoutMs, () => done({ kind: 'hung' }));
  });
}

const BAD_PATH_SUFFIXES = [
  '%zz',
  '%',
  '%E0%A4%A',
  '%00',
  '..%2F..%2Fetc%2Fpasswd',
  '../../../../etc/passwd',
  '%2e%2e/%2e%2e',
  'ünïcode',
  'a%2Fb',
  '%00x',
  'x'.repeat(4096),
  'sandboxes/sandboxes/sandboxes',
  '%252e',
  ';x=1',
  '*',
];
const BAD_QUERIES = [
  '?watch=true&timeoutSeconds=abc',
  '?watch=1&resourceVersion=abc',
  '?watch=true&resourceVersion=-5',
  '?watch=true&sendInitialEvents=true',
  '?labelSelector=(((',
  '?labelSelector=%zz',
  '?fieldSelector=metadata.name%3D%zz',
  '?fieldSelector=spec.secret%3Dx',
  '?limit=-1',
  '?limit=1e309',
  '?continue=garbage',
  '?continue=%zz',
  '?timeoutSeconds=1e308&watch=true',
  '?dryRun=Maybe',
  '?fieldValidation=Loose',
  '?includeObject=Everything',
  `?${Array.from({ length: 500 }, (_, i) => `p${i}=${i}`).join('&')}`,
  '?a=%zz&b=%',
  '?resourceVersionMatch=Exact',
];
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE'];
const BAD_BODIES: readonly { type: string; body: string | Buffer }[] = [
  { type: 'application/yaml', body: 'a: [1, 2\n  b: {' },
  {
    type: 'application/yaml',
    body: 'a: &a [x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n',
  },
  { type: 'application/yaml', body: 'kind: Sandbox\n---\nkind: Sandbox\n' },
  { type: 'application/yaml', body: '!!js/function "function(){}"' },
  { type: 'application/json', body: '{"kind":' },
  { type: 'application/json', body: `${'['.repeat(50_000)}${']'.repeat(50_000)}` },
  { type: 'application/json', body: Buffer.from([0xff, 0xfe, 0x00, 0x7b]) },
  { type: 'application/json', body: '{"kind":"DeleteOptions","preconditions":{"uid":7}}' },
  { type: 'application/json', body: '{"kind":"SandboxForkOptions","count":1000000}' },
  { type: 'application/json', body: '{"__proto__":{"admin":true},"constructor":{"prototype":{"polluted":true}}}' },
  { type: 'text/plain', body: 'hello' },
  { type: 'application/x-www-form-urlencoded', body: 'a=b' },
  { type: 'multipart/form-data; boundary=x', body: '--x\r\n\r\n--x--' },
  { type: 'application/json; charset=utf-16', body: '{}' },
  { type: '', body: '{}' },
  { type: ';;;', body: '{}' },
];

function hostileHeaders(t: Target, i: number): OutgoingHttpHeaders {
  const sets: OutgoingHttpHeaders[] = [
    { accept: 'application/garbage' },
    { accept: 'application/json;as=Table;g=meta.k8s.io;v=v9' },
    { accept: '*/*;q=abc, ,,,' },
    { authorization: `Bearer ${'x'.repeat(8_000)}` },
    { authorization: 'Basic YWRtaW46YWRtaW4=' },
    // repeated: the typed key takes one value, the header name in another case takes several
    { Authorization: ['Bearer a', 'Bearer b'] },
    { 'content-type': ['application/json', 'application/yaml'] },
    { 'x-remote-user': 'system:admin', 'x-remote-group': 'system:masters', 'x-remote-extra-%zz': 'x' },
    { 'impersonate-user': 'system:admin', 'impersonate-group': 'system:masters' },
    { 'x-forwarded-for': '10.0.0.1', 'x-forwarded-host': 'evil.example', host: 'evil.example' },
    Object.fromEntries(Array.from({ length: 300 }, (_, k) => [`x-pad-${k}`, 'v'])),
    { 'x-pad': Array.from({ length: 300 }, () => 'v') },
    { 'accept-encoding': 'gzip;q=nan, br, zstd, x'.repeat(50) },
    { 'if-none-match': '*', range: 'bytes=0-1,2-3,4-5' },
  ];
  return { ...t.auth, ...(sets[i % sets.length] as OutgoingHttpHeaders) };
}

/** The hostile requests for one server: paths × methods, queries, headers, bodies. Bounded and deterministic. */
function hostileRequests(t: Target): Hostile[] {
  const out: Hostile[] = [];
  const bases = [...t.paths, '/', '/nope', '/apis/agents.x-k8s.io/v1beta1/'];
  let i = 0;
  for (const base of bases) {
    const dir = base.endsWith('/') ? base : `${base}/`;
    for (const suffix of BAD_PATH_SUFFIXES)
      out.push({ method: METHODS[i++ % METHODS.length] as string, path: `${dir}${suffix}`, headers: t.auth });
    for (const q of BAD_QUERIES) out.push({ method: 'GET', path: `${base}${q}`, headers: t.auth });
    for (const m of [...METHODS, 'PROPFIND', 'M-SEARCH', 'PURGE']) out.push({ method: m, path: base, headers: t.auth });
    for (let h = 0; h < 14; h++)
      out.push({
        method: h % 3 === 0 ? 'POST' : 'GET',
        path: base,
        headers: hostileHeaders(t, h),
        ...(h % 3 === 0 ? { body: t.lenientJson ? '{' : '{}' } : {}),
      });
    for (const b of BAD_BODIES) {
      if (t.lenientJson && b.body === '{}') continue;
      for (const method of ['POST', 'PUT', 'PATCH', 'DELETE'])
        out.push({ method, path: base, headers: { ...t.auth, ...(b.type ? { 'content-type': b.type } : {}) }, body: b.body });
    }
  }
  // the unauthenticated caller gets the same paths
  for (const base of bases)
    for (const suffix of BAD_PATH_SUFFIXES.slice(0, 5))
      out.push({ method: 'GET', path: `${base}${base.endsWith('/') ? '' : '/'}${suffix}` });
  return out;
}

/** Request lines and header blocks no HTTP client library would send. */
function rawRequests(t: Target): (string | Buffer)[] {
  const host = 'Host: localhost\r\n';
  const auth = Object.entries(t.auth)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  const path = t.paths[0] ?? '/';
  return [
    `GET ${path}/%zz HTTP/1.1\r\n${host}${auth}\r\n`,
    `GET http://[zz${path} HTTP/1.1\r\n${host}${auth}\r\n`,
    `GET * HTTP/1.1\r\n${host}\r\n`,
    `BREW ${path} HTTP/1.1\r\n${host}\r\n`,
    `GET ${path} HTTP/9.9\r\n${host}\r\n`,
    `GET ${path}\r\n\r\n`,
    `GET ${path} HTTP/1.1\r\n${host}X-Big: ${'a'.repeat(64 * 1024)}\r\n\r\n`,
    `GET /${'a'.repeat(80 * 1024)} HTTP/1.1\r\n${host}\r\n`,
    `GET ${path} HTTP/1.1\r\n${host}Bad Header Name: x\r\n\r\n`,
    `GET ${path} HTTP/1.1\r\n${host}X-Ctl: a\u0001b\r\n\r\n`,
    `POST ${path} HTTP/1.1\r\n${host}${auth}Content-Length: 4\r\nContent-Length: 9\r\n\r\n{}{}`,
    `POST ${path} HTTP/1.1\r\n${host}${auth}Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
    `POST ${path} HTTP/1.1\r\n${host}${auth}Transfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
    `POST ${path} HTTP/1.1\r\n${host}${auth}Content-Length: -1\r\n\r\n`,
    `POST ${path} HTTP/1.1\r\n${host}${auth}Content-Length: 99999999999999999999\r\n\r\n`,
    `GET ${path} HTTP/1.1\r\n${host}${host}${host}\r\n`,
    `GET ${path} HTTP/1.1\r\n${host}\tfolded: x\r\n\r\n`,
    Buffer.from([0x16, 0x03, 0x01, 0x00, 0x00, 0xff, 0xff, 0x0d, 0x0a, 0x0d, 0x0a]),
    Buffer.from('\u0000\u0000\u0000\r\n\r\n'),
    `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`,
  ];
}

/** What the hostile requests could have written: claims and sandboxes under their names, and node claims. */
async function written(): Promise<{ claims: string[]; sandboxes: string[]; nodeClaims: number }> {
  const custom = sys.kubeConfig.makeApiClient(CustomObjectsApi);
  const claims = (
    (await custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: 'sandboxclaims' })) as {
      items: { metadata: { namespace: string; name: string } }[];
    }
  ).items;
  const sandboxes = (
    (await custom.listNamespacedCustomObject({ group: 'agents.x-k8s.io', version: 'v1beta1', namespace: ns, plural: 'sandboxes' })) as {
      items: { metadata: { name: string } }[];
    }
  ).items;
  const nodeClaims = (await sandboxdCounters(sys.nodes)).claims;
  return {
    claims: claims.map((c) => `${c.metadata.namespace}/${c.metadata.name}`).sort(),
    sandboxes: sandboxes.map((s) => s.metadata.name).sort(),
    nodeClaims,
  };
}

beforeAll(async () => {
  // probes (plain HTTP) and metrics (HTTPS, authorized) on free ports of their own, as the chart serves them
  sys = await startSuiteSystem({
    namespaces: [ns],
    local: {
      nodes: 2,
      speed: 0,
      metrics: true,
      // the chart's two claim-controller replicas: the fast path's peer endpoint is served
      claimControllerReplicas: 2,
      extraArgs: { 'sandbox-apiserver': ['--max-watches-per-user', String(WATCHES_PER_USER)] },
    },
  });
  readerToken = await sys.metricsReaderToken();
  ca = sys.servingCa;
  await grantTenantRole(sys.kubeConfig, ns, 'client', [
    { apiGroups: [GROUP], resources: ['sandboxclaims'], verbs: ['create', 'get', 'list'] },
    { apiGroups: ['agents.x-k8s.io'], resources: ['sandboxes', 'sandboxes/fork'], verbs: ['create', 'get', 'list', 'watch', 'delete'] },
  ]);
  const client = await sys.tenant(ns, 'client');
  clientToken = client.token;
  const custom = sys.kubeConfig.makeApiClient(CustomObjectsApi);
  await custom.createNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace: ns,
    plural: 'sandboxtemplates',
    body: {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: 'SandboxTemplate',
      metadata: { name: POOL },
      spec: { podTemplate: { spec: { containers: [{ name: 'agent', image: IMAGE }] } } },
    },
  });
  await custom.createNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace: ns,
    plural: 'sandboxwarmpools',
    body: {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: 'SandboxWarmPool',
      metadata: { name: POOL },
      spec: { replicas: 4, sandboxTemplateRef: { name: POOL } },
    },
  });
  const apps = ['claim-controller', 'warmpool-driver', ...sys.nodes.map((n) => `inventory-publisher-${n.name}`)];
  await eventually(
    async () => {
      const urls = await sys.probeUrls();
      for (const app of apps) {
        const url = urls.get(app);
        if (!url) throw new Error(`${app} has no probe address yet`);
      }
      for (const [app, url] of urls) probes.set(app, url);
      const metrics = await sys.metricsEndpoints();
      for (const app of apps) if (!metrics.has(app)) throw new Error(`${app} has no metrics address yet`);
      for (const [app, e] of metrics) metricsBases.set(app, e.url.replace(/\/metrics$/, ''));
    },
    { timeoutMs: 60_000, intervalMs: 500 },
  );
}, 300_000);

afterAll(async () => {
  await sys?.stop();
}, 120_000);

describe('every server under hostile requests', () => {
  it('answers hostile paths, queries, headers and bodies with a 4xx or a clean close, never a 5xx, an exit or a write', async () => {
    const server = sys.kubeConfig.getCurrentCluster()?.server ?? '';
    const bearer = { authorization: `Bearer ${clientToken}` };
    const group = `/apis/agents.x-k8s.io/v1beta1`;
    const sb = `${group}/namespaces/${ns}/sandboxes`;
    const targets: Target[] = [
      {
        name: 'sandbox-apiserver',
        base: sys.apiserverUrl,
        tls: true,
        raw: true,
        auth: bearer,
        paths: [sb, `${sb}/x`, `${sb}/x/fork`, `${group}/namespaces/sandboxes/sandboxes/x`, '/healthz', '/metrics', '/openapi/v2'],
      },
      {
        name: 'kube-apiserver',
        base: server,
        tls: true,
        raw: false,
        auth: bearer,
        paths: [
          sb,
          `${sb}/x`,
          `${sb}/x/fork`,
          `${group}/namespaces/sandboxes/sandboxes/x`,
          `/apis/${GROUP}/${VERSION}/namespaces/${ns}/sandboxclaims`,
        ],
      },
      { name: 'fast-path', base: sys.fastPathUrl, tls: true, raw: true, auth: bearer, paths: ['/v1/claims', '/internal/peers/v1/call'] },
      ...[...probes].map(([app, base]) => ({
        name: `probe:${app}`,
        base,
        tls: false,
        raw: true,
        auth: {},
        paths: ['/healthz', '/readyz', '/livez', '/metrics'],
      })),
      ...[...metricsBases].map(([app, base]) => ({
        name: `metrics:${app}`,
        base,
        tls: true,
        raw: true,
        auth: { authorization: `Bearer ${readerToken}` },
        paths: ['/metrics', '/healthz', '/readyz'],
      })),
      ...sys.nodes.map((n) => ({
        name: `sandboxd-sim:${n.name}`,
        base: n.url,
        tls: false,
        raw: true,
        lenientJson: true,
        auth: { authorization: `Bearer ${n.token}` },
        paths: ['/v1/sandboxes', '/v1/claim', '/v1/sandboxes/x/fork', '/v1/pools', '/v1/info', '/metrics'],
      })),
    ];
    // ready before, so a 503 from an unsynced server is never mistaken for one a request caused
    await eventually(
      async () => {
        for (const [app, base] of probes) {
          const r = await send({ name: app, base, tls: false, raw: true, auth: {}, paths: [] }, { method: 'GET', path: '/readyz' });
          if (r.kind !== 'status' || r.status !== 200) throw new Error(`${app} not ready: ${JSON.stringify(r)}`);
        }
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    const before = await written();

    // slow clients: headers that never end, on every server at once, for the whole run
    // (node checks the deadlines every 30 s, so one is closed within a minute or so)
    const slow = targets
      .filter((t) => t.raw)
      .map((t) => sendRaw(t, `GET ${t.paths[0] ?? '/'} HTTP/1.1\r\nHost: localhost\r\nX-Slow: `, 150_000));

    const perServer: Record<string, number> = {};
    const statuses: Record<string, number> = {};
    const offending: { server: string; method: string; path: string; outcome: Outcome }[] = [];
    let closed = 0;
    const jobs = targets.flatMap((t) => [
      ...hostileRequests(t).map((h) => ({ t, label: `${h.method} ${h.path.slice(0, 120)}`, run: () => send(t, h) })),
      ...(t.raw ? rawRequests(t) : []).map((r, i) => ({ t, label: `raw#${i}`, run: () => sendRaw(t, r) })),
    ]);
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < jobs.length) {
        const job = jobs[next++] as (typeof jobs)[number];
        const outcome = await job.run();
        perServer[job.t.name] = (perServer[job.t.name] ?? 0) + 1;
        if (outcome.kind === 'status') statuses[String(outcome.status)] = (statuses[String(outcome.status)] ?? 0) + 1;
        if (outcome.kind === 'closed') closed++;
        if (outcome.kind === 'hung' || (outcome.kind === 'status' && outcome.status >= 500))
          offending.push({ server: job.t.name, method: job.label, path: '', outcome });
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, () => worker()));

    // each slow client is answered 408 or closed by the server's header deadline
    const slowOutcomes = await Promise.all(slow);
    const slowBounded = slowOutcomes.filter((o) => o.kind === 'closed' || (o.kind === 'status' && o.status === 408)).length;

    // a dead server cannot be asked: that is reported as a failed check, after the figures
    let unreadable: string | undefined;
    const after = await written().catch((err: unknown) => {
      unreadable = err instanceof Error ? err.message.split('\n')[0] : String(err);
      return before;
    });
    const exits = await sys.appsThatExited();
    const count5xx = offending.filter((o) => o.outcome.kind === 'status').length;
    const hung = offending.filter((o) => o.outcome.kind === 'hung').length;
    const newClaims = after.claims.filter((c) => !before.claims.includes(c));
    const newSandboxes = after.sandboxes.filter((s) => !before.sandboxes.includes(s));
    console.log(
      JSON.stringify({
        test: 'security-hostile',
        hostile_requests: perServer,
        total: jobs.length,
        process_exits: exits.length,
        answered_5xx: count5xx,
        hung,
        closed_by_server: closed,
        statuses,
        slow_clients: slow.length,
        slow_clients_bounded: slowBounded,
        new_claims: newClaims.length,
        new_sandboxes: newSandboxes.length,
        node_claims: after.nodeClaims - before.nodeClaims,
        writes_readable: unreadable === undefined,
      }),
    );
    if (offending.length > 0) console.log(JSON.stringify(offending.slice(0, 20)));

    for (const t of targets) expect(perServer[t.name]).toBeGreaterThanOrEqual(100);
    expect(Object.values(perServer).reduce((a, b) => a + b, 0)).toBe(jobs.length);
    // every request was answered with a status or closed by the server, none left hanging
    expect(Object.values(statuses).reduce((a, b) => a + b, 0) + closed + hung).toBe(jobs.length);
    expect(exits).toEqual([]);
    expect(unreadable).toBeUndefined();
    expect(count5xx).toBe(0);
    expect(hung).toBe(0);
    expect(slowBounded).toBe(slow.length);
    expect(newClaims).toEqual([]);
    expect(newSandboxes).toEqual([]);
    expect(after.nodeClaims - before.nodeClaims).toBe(0);
  }, 600_000);

  it('caps the watches one user holds open with 429 and frees the slot when a watch ends', async () => {
    const t: Target = {
      name: 'sandbox-apiserver',
      base: sys.apiserverUrl,
      tls: true,
      raw: true,
      auth: { authorization: `Bearer ${clientToken}` },
      paths: [],
    };
    const u = new URL(sys.apiserverUrl);
    const open = (): Promise<{ status: number; close: () => void }> =>
      new Promise((resolve, reject) => {
        const req = httpsRequest(
          {
            host: u.hostname,
            port: u.port,
            path: `/apis/agents.x-k8s.io/v1beta1/namespaces/${ns}/sandboxes?watch=true&timeoutSeconds=120`,
            headers: t.auth,
            ca,
            servername: sys.servernameOf(sys.apiserverUrl),
            agent: false,
          },
          (res) => {
            res.resume();
            resolve({ status: res.statusCode ?? 0, close: () => req.destroy() });
          },
        );
        req.on('error', reject);
        req.end();
      });
    const watches = [];
    for (let i = 0; i < WATCHES_PER_USER; i++) watches.push(await open());
    const refused = await open();
    refused.close();
    watches[0]?.close();
    // the slot comes back once the server sees the watch's connection close
    const again = await eventually(
      async () => {
        const w = await open();
        if (w.status !== 200) {
          w.close();
          throw new Error(`watch answered ${w.status}`);
        }
        return w;
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    for (const w of [...watches, again]) w.close();
    const opened = watches.filter((w) => w.status === 200).length;
    console.log(
      JSON.stringify({ test: 'watch-cap', cap: WATCHES_PER_USER, opened, refused_status: refused.status, reopened_status: again.status }),
    );
    expect(opened).toBe(WATCHES_PER_USER);
    expect(refused.status).toBe(429);
    expect(again.status).toBe(200);
  }, 120_000);
});
