import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import type { ClientRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { RbacAuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { eventually, freePort, kubectlJson, kubectlOk, runSuffix } from '../src/index';
import { applyWarmPool, itWhere, startSuiteSystem } from '../src/system/suite-system';
import { e2eTarget, type SystemUnderTest } from '../src/system/system-under-test';
import { GUEST_UIDS } from '../src/installed/installed-system';
import { MAX_FILE_BYTES } from '../src/installed/installed-values';
import { exchange, jsonOf, kubeRaw, kubeUpgrade, type RawReply, type RawRequest } from '../src/testing/data-plane-requests';
import { samples } from '../src/testing/metric-names';
import { sandboxdCall } from '../src/testing/sandboxd';
import { grantEditRole } from '../src/testing/tenant-role';

// The data plane of a claimed sandbox through the Kubernetes API: exec, files and portforward
// subresources of sandboxes, served by sandbox-apiserver behind kube-apiserver's aggregator,
// driven by tenants holding the chart's edit role (or view, or another namespace's edit) with
// their own bearer tokens, against sandboxd-sim's real processes and files over HTTP.

const ns = `dp-${runSuffix()}`;
const otherNs = `dpo-${runSuffix()}`;
const G = 'agents.x-k8s.io';
const base = (name: string, namespace = ns): string => `/apis/${G}/v1beta1/namespaces/${namespace}/sandboxes/${name}`;

let sys: SystemUnderTest;
let editor: KubeConfig;
let viewer: KubeConfig;
let outsider: KubeConfig;
let editorToken = '';
/** Every reply any tenant got, searched for the sandbox token at the end. */
const transcript: RawReply[] = [];

interface Status {
  kind: string;
  code: number;
  reason: string;
  message: string;
  status: string;
}
interface ExecResult {
  kind: string;
  exitCode: number;
  stdout: string;
  stderr: string;
}
interface FileInfo {
  kind: string;
  path: string;
  type: string;
  size: number;
  mode: number;
  mtime: string;
}

async function call(kc: KubeConfig, r: RawRequest): Promise<RawReply> {
  const reply = await kubeRaw(kc, r);
  transcript.push(reply);
  return reply;
}

const exec = (kc: KubeConfig, name: string, body: unknown): Promise<RawReply> =>
  call(kc, { method: 'POST', path: `${base(name)}/exec`, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

const files = (
  kc: KubeConfig,
  method: RawRequest['method'],
  name: string,
  query: string,
  extra: Omit<RawRequest, 'method' | 'path'> = {},
) => call(kc, { method, path: `${base(name)}/files?${query}`, ...extra });

async function claim(name: string): Promise<void> {
  await kubectlOk(['apply', '-f', '-'], {
    kubeconfig: sys.kubeconfigPath,
    input: JSON.stringify({
      apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
      kind: 'SandboxClaim',
      metadata: { name, namespace: ns },
      spec: { warmPoolRef: { name: 'agent' } },
    }),
  });
  await kubectlOk(['-n', ns, 'wait', '--for=condition=Ready', `sandboxclaim/${name}`, '--timeout=120s'], {
    kubeconfig: sys.kubeconfigPath,
  });
}

type Sandbox = { metadata: { labels?: Record<string, string>; annotations?: Record<string, string> } };
const served = (name: string): Promise<Sandbox> =>
  kubectlJson<Sandbox>(['-n', ns, 'get', 'sandbox', name], { kubeconfig: sys.kubeconfigPath });

async function bind(namespace: string, sa: string, clusterRole: string): Promise<void> {
  await sys.kubeConfig.makeApiClient(RbacAuthorizationV1Api).createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: `${sa}-${clusterRole}` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterRole },
      subjects: [{ kind: 'ServiceAccount', name: sa, namespace }],
    },
  });
}

beforeAll(async () => {
  sys = await startSuiteSystem({
    namespaces: [ns, otherNs],
    local: {
      nodes: 1,
      speed: 0.02,
      publishInterval: '1s',
      extraArgs: { 'sandbox-apiserver': ['--max-file-bytes', String(MAX_FILE_BYTES)] },
    },
  });
  const e = await sys.tenant(ns, 'editor');
  editor = e.kubeConfig;
  editorToken = e.token;
  await grantEditRole(sys.kubeConfig, ns, 'editor');
  viewer = (await sys.tenant(ns, 'viewer')).kubeConfig;
  await bind(ns, 'viewer', 'view');
  outsider = (await sys.tenant(otherNs, 'outsider')).kubeConfig;
  await grantEditRole(sys.kubeConfig, otherNs, 'outsider');
  await applyWarmPool(sys, ns, { image: 'ghcr.io/example/dp-agent:1.0', replicas: 3 });
  await claim('a');
  await claim('p');
  // kube-controller-manager folds the chart's roles into edit and view a moment after they exist
  await eventually(
    async () => {
      const r = await exec(editor, 'a', { argv: ['true'] });
      expect(r.status).toBe(200);
    },
    { timeoutMs: 60_000, intervalMs: 500 },
  );
}, 300_000);

afterAll(async () => {
  await sys?.stop();
}, 60_000);

describe('exec', () => {
  it('runs a command and answers its exit code, stdout and stderr; a non-zero exit is a result', async () => {
    const ok = await exec(editor, 'a', {
      kind: 'SandboxExecOptions',
      argv: ['python3', '-c', 'import sys; print(6*7); print("warn", file=sys.stderr)'],
    });
    expect(ok.status).toBe(200);
    expect(jsonOf<ExecResult>(ok)).toEqual({
      apiVersion: `${G}/v1beta1`,
      kind: 'SandboxExecResult',
      exitCode: 0,
      stdout: '42\n',
      stderr: 'warn\n',
    });
    const failed = jsonOf<ExecResult>(
      await exec(editor, 'a', { argv: ['sh', '-c', 'echo out; echo err >&2; exit 3'], env: { GREETING: 'x' } }),
    );
    expect(failed).toMatchObject({ exitCode: 3, stdout: 'out\n', stderr: 'err\n' });
    const env = jsonOf<ExecResult>(await exec(editor, 'a', { argv: ['sh', '-c', 'printf %s "$GREETING"'], env: { GREETING: 'hello' } }));
    expect(env.stdout).toBe('hello');
  });

  it('answers 504 Timeout past timeoutSeconds, 400 for a missing command, an unknown field or bad JSON, 413 past 1 MiB, 422 for a prototype key', async () => {
    const slow = await exec(editor, 'a', { argv: ['sleep', '30'], timeoutSeconds: 1 });
    expect({ status: slow.status, reason: jsonOf<Status>(slow).reason }).toEqual({ status: 504, reason: 'Timeout' });
    expect(jsonOf<Status>(slow).message).toContain(`sandbox ${ns}/a`);
    const missing = await exec(editor, 'a', { argv: ['no-such-command-here'] });
    expect({ status: missing.status, reason: jsonOf<Status>(missing).reason }).toEqual({ status: 400, reason: 'BadRequest' });
    expect(jsonOf<Status>(missing).message).toContain(`sandbox ${ns}/a`);
    const unknown = await exec(editor, 'a', { argv: ['true'], shell: true });
    expect({ status: unknown.status, message: jsonOf<Status>(unknown).message }).toEqual({
      status: 400,
      message: expect.stringContaining('shell'),
    });
    expect((await exec(editor, 'a', { argv: [] })).status).toBe(400);
    const badJson = await call(editor, {
      method: 'POST',
      path: `${base('a')}/exec`,
      headers: { 'content-type': 'application/json' },
      body: '{"argv":',
    });
    expect(badJson.status).toBe(400);
    const huge = await exec(editor, 'a', { argv: ['true', 'x'.repeat(1024 * 1024)] });
    expect({ status: huge.status, reason: jsonOf<Status>(huge).reason }).toEqual({ status: 413, reason: 'RequestEntityTooLarge' });
    const proto = await call(editor, {
      method: 'POST',
      path: `${base('a')}/exec`,
      headers: { 'content-type': 'application/json' },
      body: '{"argv":["true"],"env":{"__proto__":{"polluted":"1"}}}',
    });
    expect(proto.status).toBe(422);
    // the server still serves after every refusal
    expect((await exec(editor, 'a', { argv: ['true'] })).status).toBe(200);
  });

  it('answers 404 naming the sandbox for one that does not exist', async () => {
    const r = await exec(editor, 'nope', { argv: ['true'] });
    expect({ status: r.status, reason: jsonOf<Status>(r).reason, message: jsonOf<Status>(r).message }).toEqual({
      status: 404,
      reason: 'NotFound',
      message: expect.stringContaining('"nope"'),
    });
  });

  it('wakes a paused sandbox for an exec, and the served sandbox stops showing it paused', async () => {
    const pause = await call(editor, {
      method: 'POST',
      path: `${base('p')}/pause`,
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(pause.status).toBe(201);
    await eventually(async () => expect((await served('p')).metadata.labels?.['sandbox.cocoonstack.io/phase']).toBe('Hibernated'), {
      timeoutMs: 30_000,
      intervalMs: 500,
    });
    const r = await exec(editor, 'p', { argv: ['sh', '-c', 'echo awake'] });
    expect({ status: r.status, stdout: jsonOf<ExecResult>(r).stdout }).toEqual({ status: 200, stdout: 'awake\n' });
    await eventually(async () => expect((await served('p')).metadata.labels?.['sandbox.cocoonstack.io/phase']).not.toBe('Hibernated'), {
      timeoutMs: 30_000,
      intervalMs: 500,
    });
  });
});

describe('files', () => {
  it('round-trips 1 MiB of random bytes, lists the directory, stats and deletes the file', async () => {
    const data = randomBytes(1024 * 1024);
    const put = await files(editor, 'PUT', 'a', 'path=/work/data/blob.bin&mode=0600', {
      headers: { 'content-type': 'application/octet-stream' },
      body: data,
    });
    expect(put.status).toBe(201);
    expect(jsonOf<FileInfo>(put)).toMatchObject({
      kind: 'SandboxFileInfo',
      path: '/work/data/blob.bin',
      type: 'file',
      size: data.length,
      mode: 0o600,
    });
    const got = await files(editor, 'GET', 'a', 'path=/work/data/blob.bin');
    expect({ status: got.status, type: got.headers['content-type'] }).toEqual({ status: 200, type: 'application/octet-stream' });
    expect(got.body.equals(data)).toBe(true);
    const list = jsonOf<{ kind: string; path: string; items: { name: string; kind: string; size: number }[] }>(
      await files(editor, 'GET', 'a', 'path=/work/data'),
    );
    expect(list).toMatchObject({
      kind: 'SandboxFileList',
      path: '/work/data',
      items: [{ name: 'blob.bin', kind: 'file', size: data.length }],
    });
    const stat = jsonOf<FileInfo>(await files(editor, 'GET', 'a', 'path=/work/data/blob.bin&stat=true'));
    expect(stat).toMatchObject({
      kind: 'SandboxFileInfo',
      type: 'file',
      size: data.length,
      mtime: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
    });
    // a file written through the API is the one a command in the sandbox sees
    const seen = jsonOf<ExecResult>(await exec(editor, 'a', { argv: ['wc', '-c', 'data/blob.bin'], cwd: '/work' }));
    expect(seen.stdout.trim()).toBe(`${data.length} data/blob.bin`);
    const del = await files(editor, 'DELETE', 'a', 'path=/work/data/blob.bin');
    expect({ status: del.status, kind: jsonOf<Status>(del).kind, status2: jsonOf<Status>(del).status }).toEqual({
      status: 200,
      kind: 'Status',
      status2: 'Success',
    });
    const gone = await files(editor, 'GET', 'a', 'path=/work/data/blob.bin');
    expect({ status: gone.status, reason: jsonOf<Status>(gone).reason }).toEqual({ status: 404, reason: 'NotFound' });
    expect((await files(editor, 'DELETE', 'a', 'path=/work/data&recursive=true')).status).toBe(200);
  });

  it('refuses a path with "..", NUL or none with a 400 and writes nothing', async () => {
    for (const q of ['path=/work/../../escape.txt', 'path=../escape.txt', 'path=/work/a%00b', '']) {
      const r = await files(editor, 'PUT', 'a', q, { body: 'nope' });
      expect({ q, status: r.status, reason: jsonOf<Status>(r).reason }).toEqual({ q, status: 400, reason: 'BadRequest' });
    }
    const root = jsonOf<{ items: { name: string }[] }>(await files(editor, 'GET', 'a', 'path=/'));
    expect(root.items.map((i) => i.name)).not.toContain('escape.txt');
    // nothing on the simulator's host beside the sandbox roots either
    const host = jsonOf<ExecResult>(await exec(editor, 'a', { argv: ['sh', '-c', 'ls -a .. ../.. | grep -c escape.txt || true'] }));
    expect(host.stdout.trim()).toBe('0');
  });

  it('answers 413 past --max-file-bytes and keeps nothing of the body, sent whole or chunked', async () => {
    const big = randomBytes(MAX_FILE_BYTES + 1);
    const whole = await files(editor, 'PUT', 'a', 'path=/work/big.bin', { body: big });
    expect({ status: whole.status, reason: jsonOf<Status>(whole).reason }).toEqual({ status: 413, reason: 'RequestEntityTooLarge' });
    const chunks = [big.subarray(0, 2 * 1024 * 1024), big.subarray(2 * 1024 * 1024)];
    const chunked = await files(editor, 'PUT', 'a', 'path=/work/big2.bin', { body: chunks });
    expect({ status: chunked.status, reason: jsonOf<Status>(chunked).reason }).toEqual({ status: 413, reason: 'RequestEntityTooLarge' });
    for (const p of ['/work/big.bin', '/work/big2.bin']) expect((await files(editor, 'GET', 'a', `path=${p}&stat=true`)).status).toBe(404);
    // nor a temporary file beside it, once the guest has seen the write cut off
    await eventually(async () => {
      const left = jsonOf<ExecResult>(await exec(editor, 'a', { argv: ['ls', '-A', '.'], cwd: '/work' }));
      expect(left.stdout).not.toMatch(/big/);
    });
  });

  it('extracts a tar stream under a directory and answers one back, as tar reads it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dp-tar-'));
    try {
      const src = join(dir, 'src');
      mkdirSync(join(src, 'sub', 'deep'), { recursive: true });
      const payload = randomBytes(300 * 1024);
      writeFileSync(join(src, 'a.txt'), 'alpha\n');
      writeFileSync(join(src, 'sub', 'deep', 'b.bin'), payload);
      const long = `${'n'.repeat(120)}.txt`;
      writeFileSync(join(src, 'sub', long), 'long name\n');
      const tarred = spawnSync('tar', ['-C', src, '-cf', '-', '.'], { maxBuffer: 64 * 1024 * 1024 });
      expect(tarred.status).toBe(0);
      const put = await files(editor, 'PUT', 'a', 'path=/work/tree', {
        headers: { 'content-type': 'application/x-tar' },
        body: tarred.stdout,
      });
      expect({ status: put.status, type: jsonOf<FileInfo>(put).type }).toEqual({ status: 201, type: 'dir' });
      expect((await files(editor, 'GET', 'a', 'path=/work/tree/sub/deep/b.bin')).body.equals(payload)).toBe(true);

      const back = await files(editor, 'GET', 'a', 'path=/work/tree', { headers: { accept: 'application/x-tar' } });
      expect({ status: back.status, type: back.headers['content-type'] }).toEqual({ status: 200, type: 'application/x-tar' });
      const out = join(dir, 'out');
      mkdirSync(out);
      const untar = spawnSync('tar', ['-C', out, '-xf', '-'], { input: back.body });
      expect({ code: untar.status, stderr: untar.stderr.toString() }).toEqual({ code: 0, stderr: '' });
      // named relative to the parent, as `tar -C /work -cf - tree`
      expect(readFileSync(join(out, 'tree', 'a.txt'), 'utf8')).toBe('alpha\n');
      expect(readFileSync(join(out, 'tree', 'sub', 'deep', 'b.bin')).equals(payload)).toBe(true);
      expect(readFileSync(join(out, 'tree', 'sub', long), 'utf8')).toBe('long name\n');

      // an entry that climbs out of the target is refused
      const evil = spawnSync('tar', ['-C', src, '-cf', '-', '-P', '--transform', 's,^,../../,', 'a.txt'], { maxBuffer: 1024 * 1024 });
      expect(evil.status).toBe(0);
      const refused = await files(editor, 'PUT', 'a', 'path=/work/evil', {
        headers: { 'content-type': 'application/x-tar' },
        body: evil.stdout,
      });
      expect({ status: refused.status, reason: jsonOf<Status>(refused).reason }).toEqual({ status: 400, reason: 'BadRequest' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** Starts python's HTTP server on `port` in sandbox `name`, serving `cwd`. */
async function serveHttp(name: string, port: number, cwd?: string): Promise<void> {
  const start = await exec(editor, name, {
    argv: ['sh', '-c', `python3 -m http.server ${port} --bind 127.0.0.1 >/dev/null 2>&1 &`],
    ...(cwd !== undefined ? { cwd } : {}),
  });
  expect(jsonOf<ExecResult>(start).exitCode).toBe(0);
}

/** GET `path` through a port-forward to sandbox `name`, once something answers there. */
const getForwarded = (name: string, port: number, path: string): Promise<string> =>
  eventually(
    async () => {
      const up = await kubeUpgrade(editor, 'POST', `${base(name)}/portforward?port=${port}`);
      if (!up.upgraded) throw new Error(`${up.reply.status} ${up.reply.body.toString()}`);
      return (await exchange(up.socket, `GET ${path} HTTP/1.1\r\nHost: sandbox\r\nConnection: close\r\n\r\n`)).toString('utf8');
    },
    { timeoutMs: 20_000, intervalMs: 300 },
  );

describe('portforward', () => {
  it("relays to the sandbox's built-in runtime on 8888 through kube-apiserver, POST or GET upgrade", async () => {
    for (const method of ['POST', 'GET'] as const) {
      const up = await kubeUpgrade(editor, method, `${base('a')}/portforward?port=8888`);
      if (!up.upgraded) throw new Error(`${method}: ${up.reply.status} ${up.reply.body.toString()}`);
      expect(up.headers.upgrade).toBe('tcp');
      const answer = (await exchange(up.socket, 'GET / HTTP/1.1\r\nHost: sandbox\r\nConnection: close\r\n\r\n')).toString('utf8');
      expect(answer).toMatch(/^HTTP\/1\.1 200/);
      expect(answer).toContain('"status":"ok"');
    }
  });

  it('fetches a file from an HTTP server a command in the sandbox started', async () => {
    const port = await freePort();
    expect((await files(editor, 'PUT', 'a', 'path=/served/hello.txt', { body: 'served through the tunnel\n' })).status).toBe(201);
    await serveHttp('a', port, '/served');
    const body = await getForwarded('a', port, '/hello.txt');
    expect(body).toMatch(/^HTTP\/1\.[01] 200/);
    expect(body).toContain('served through the tunnel');
  });

  it('answers a bad port with 400 and a port nothing listens on with 503, each naming the sandbox', async () => {
    const bad = await kubeUpgrade(editor, 'POST', `${base('a')}/portforward?port=70000`);
    expect(bad.upgraded ? 101 : bad.reply.status).toBe(400);
    const closed = await kubeUpgrade(editor, 'POST', `${base('a')}/portforward?port=${await freePort()}`);
    if (closed.upgraded) throw new Error('upgraded to a port nothing listens on');
    expect({ status: closed.reply.status, message: jsonOf<Status>(closed.reply).message }).toEqual({
      status: 503,
      message: expect.stringContaining(`sandbox ${ns}/a`),
    });
  });

  it('passes a half-close through when the caller reaches sandbox-apiserver directly', async () => {
    const socket = await new Promise<Socket>((resolve, reject) => {
      const u = new URL(`${sys.apiserverUrl}${base('a')}/portforward?port=8888`);
      const req: ClientRequest = httpsRequest({
        hostname: u.hostname,
        port: u.port,
        path: `${u.pathname}${u.search}`,
        method: 'POST',
        ca: sys.servingCa,
        servername: sys.servernameOf(sys.apiserverUrl),
        agent: false,
        headers: { Connection: 'Upgrade', Upgrade: 'tcp', Authorization: `Bearer ${editorToken}` },
      });
      req.on('upgrade', (_res, s: Socket) => resolve(s));
      req.on('response', (res) => reject(new Error(`no upgrade: ${res.statusCode}`)));
      req.on('error', reject);
      req.end();
    });
    // the request is sent and the caller's side ended before the answer comes back
    const answer = (await exchange(socket, 'GET / HTTP/1.1\r\nHost: sandbox\r\nConnection: close\r\n\r\n', { halfClose: true })).toString();
    expect(answer).toContain('"status":"ok"');
  });
});

describe("the guest's reach on the node", () => {
  // The installed simulator gives each sandbox a uid of its own (--guest-uids); the local one runs
  // commands as its own user, isolated by path only.
  const guestUids = itWhere(e2eTarget() === 'installed', 'the local simulator runs guest commands as its own user');

  guestUids("cannot read the node's root token, nor write outside its root", async () => {
    const probe = [
      'id -u',
      'cat /var/run/sandboxd/api-token; echo token=$?',
      'touch /var/lib/sandboxd-sim/x; echo data-dir=$?',
      'touch /dev/shm/x; echo shm=$?',
      'touch own.txt; echo own=$?',
    ].join('; ');
    const r = jsonOf<ExecResult>(await exec(editor, 'a', { argv: ['sh', '-c', probe] }));
    const [uid, ...codes] = r.stdout.trim().split('\n');
    expect(Number(uid)).toBeGreaterThanOrEqual(GUEST_UIDS.first);
    expect(Number(uid)).toBeLessThanOrEqual(GUEST_UIDS.last);
    expect(codes).toEqual(['token=1', 'data-dir=1', 'shm=1', 'own=0']);
    expect(r.stderr).toContain('Permission denied');
    for (const node of sys.nodes) expect(r.stdout + r.stderr).not.toContain(node.token);
  });

  guestUids("refuses a port-forward to another sandbox's listener, and relays it for its owner", async () => {
    const port = await freePort();
    await serveHttp('p', port);
    const owner = await getForwarded('p', port, '/');
    expect(owner).toMatch(/^HTTP\/1\.[01] 200/);
    const other = await kubeUpgrade(editor, 'POST', `${base('a')}/portforward?port=${port}`);
    if (other.upgraded) throw new Error("sandbox a reached sandbox p's listener");
    expect(other.reply.status).toBe(503);
  });
});

describe('who may use the data plane', () => {
  it('refuses a viewer exec, file writes, file reads and port-forwards (403), and lets it still read the sandbox', async () => {
    const refused = [
      await exec(viewer, 'a', { argv: ['true'] }),
      await files(viewer, 'PUT', 'a', 'path=/work/v.txt', { body: 'v' }),
      await files(viewer, 'GET', 'a', 'path=/work'),
      await files(viewer, 'DELETE', 'a', 'path=/work'),
    ];
    expect(refused.map((r) => r.status)).toEqual([403, 403, 403, 403]);
    const up = await kubeUpgrade(viewer, 'POST', `${base('a')}/portforward?port=8888`);
    expect(up.upgraded ? 101 : up.reply.status).toBe(403);
    expect((await call(viewer, { method: 'GET', path: base('a') })).status).toBe(200);
  });

  it("refuses a tenant of another namespace every data-plane call on this namespace's sandbox", async () => {
    const r = await call(outsider, {
      method: 'POST',
      path: `${base('a')}/exec`,
      headers: { 'content-type': 'application/json' },
      body: '{"argv":["true"]}',
    });
    expect(r.status).toBe(403);
    expect((await call(outsider, { method: 'GET', path: `${base('a')}/files?path=/` })).status).toBe(403);
    const up = await kubeUpgrade(outsider, 'POST', `${base('a')}/portforward?port=8888`);
    expect(up.upgraded ? 101 : up.reply.status).toBe(403);
    // and in its own namespace there is no such sandbox
    const own = await call(outsider, {
      method: 'POST',
      path: `${base('a', otherNs)}/exec`,
      headers: { 'content-type': 'application/json' },
      body: '{"argv":["true"]}',
    });
    expect(own.status).toBe(404);
  });

  it('advertises the subresources with their verbs in discovery, and their paths and kinds in OpenAPI', async () => {
    const list = jsonOf<{ resources: { name: string; verbs: string[] }[] }>(
      await call(editor, { method: 'GET', path: `/apis/${G}/v1beta1` }),
    );
    const verbs = Object.fromEntries(list.resources.filter((r) => /exec|files|portforward/.test(r.name)).map((r) => [r.name, r.verbs]));
    expect(verbs).toEqual({
      'sandboxes/exec': ['create'],
      'sandboxes/files': ['create', 'delete', 'get', 'update'],
      'sandboxes/portforward': ['create', 'get'],
    });
    // the OpenAPI v3 document of the group, as kube-apiserver serves it (kubectl explain reads it)
    const v3 = jsonOf<{ paths: Record<string, unknown>; components: { schemas: Record<string, unknown> } }>(
      await call(editor, { method: 'GET', path: `/openapi/v3/apis/${G}/v1beta1` }),
    );
    for (const sub of ['exec', 'files', 'portforward'])
      expect(Object.keys(v3.paths)).toContain(`/apis/${G}/v1beta1/namespaces/{namespace}/sandboxes/{name}/${sub}`);
    for (const kind of ['SandboxExecOptions', 'SandboxExecResult', 'SandboxFileList', 'SandboxFileInfo'])
      expect(Object.keys(v3.components.schemas)).toContain(`io.x-k8s.agents.v1beta1.${kind}`);
  });
});

describe('audit, metrics and the token', () => {
  it('logs each exec and file write with the caller, the sandbox and the argv, never env values or contents, and counts them', async () => {
    const marker = `m${runSuffix()}`;
    expect((await exec(editor, 'a', { argv: ['echo', marker], env: { SECRET_VALUE: `${marker}-env-value` } })).status).toBe(200);
    expect((await files(editor, 'PUT', 'a', `path=/work/${marker}.txt`, { body: `${marker}-file-contents` })).status).toBe(201);
    const logs = await eventually(async () => {
      const text = [...(await sys.appLogs())]
        .filter(([app]) => app.includes('sandbox-apiserver'))
        .map(([, t]) => t)
        .join('\n');
      expect(text).toContain(`/work/${marker}.txt`);
      return text;
    });
    const lines = logs
      .split('\n')
      .filter((l) => l.includes(marker))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const execLine = lines.find((l) => l.op === 'exec');
    expect(execLine).toMatchObject({
      msg: 'sandbox data plane',
      user: `system:serviceaccount:${ns}:editor`,
      namespace: ns,
      name: 'a',
      argv: ['echo', marker],
      envKeys: ['SECRET_VALUE'],
      code: 200,
      exitCode: 0,
    });
    expect(lines.find((l) => l.op === 'write')).toMatchObject({
      user: `system:serviceaccount:${ns}:editor`,
      path: `/work/${marker}.txt`,
      code: 201,
    });
    expect(logs).not.toContain(`${marker}-env-value`);
    expect(logs).not.toContain(`${marker}-file-contents`);

    // each replica counts the requests it served (the replica owning the sandbox's name): every
    // replica's page is read, until one of them has counted each kind of request
    let pages: string[] = [];
    const count = (op: string, code: string): number =>
      Math.max(
        0,
        ...pages.flatMap((page) =>
          samples(page, 'sandbox_scale_apiserver_data_plane_requests_total')
            .filter((s) => s.labels.op === op && s.labels.code === code)
            .map((s) => s.value),
        ),
      );
    await eventually(async () => {
      const dispatcher = new Agent({ connect: { ca: sys.servingCa, servername: sys.servernameOf(sys.apiserverUrl) } });
      try {
        const token = await sys.metricsReaderToken();
        pages = await Promise.all(
          sys.apiserverUrls.map(async (url) => {
            const r = await request(`${url}/metrics`, { dispatcher, headers: { authorization: `Bearer ${token}` } });
            return r.body.text();
          }),
        );
      } finally {
        await dispatcher.close();
      }
      expect(count('exec', '200')).toBeGreaterThan(0);
      expect(count('write', '201')).toBeGreaterThan(0);
      expect(count('exec', '504')).toBeGreaterThan(0);
    });
    const durations = pages.flatMap((page) => samples(page, 'sandbox_scale_apiserver_data_plane_request_duration_seconds_count'));
    expect(durations.length).toBeGreaterThan(0);
  });

  itWhere(e2eTarget() === 'local', 'reads the node token of the local simulator')(
    "never hands the sandbox's token to a tenant, in any reply",
    async () => {
      const sb = await served('a');
      const id = sb.metadata.annotations?.['sandbox.cocoonstack.io/claim-id'] ?? '';
      const node = sys.nodes[0];
      if (node === undefined) throw new Error('no node');
      const detail = (await (await sandboxdCall(node, `/v1/sandboxes/${id}`)).json()) as { token?: string };
      const token = detail.token ?? '';
      expect(token).toMatch(/^[0-9a-f]{32}$/);
      expect(transcript.length).toBeGreaterThan(20);
      const leaked = transcript.filter((r) => r.body.includes(token) || JSON.stringify(r.headers).includes(token));
      expect(leaked.length).toBe(0);
      const logs = [...(await sys.appLogs())]
        .filter(([app]) => app.includes('sandbox-apiserver'))
        .map(([, t]) => t)
        .join('\n');
      expect(logs.includes(token)).toBe(false);
    },
  );

  it('writes and reads back a file of exactly --max-file-bytes through the aggregated API', async () => {
    // a file of --max-file-bytes written and read back through the aggregated API
    const data = randomBytes(MAX_FILE_BYTES);
    const put = await files(editor, 'PUT', 'a', 'path=/work/largest.bin', { body: data });
    const got = await files(editor, 'GET', 'a', 'path=/work/largest.bin');
    expect({ put: put.status, bytes: jsonOf<FileInfo>(put).size, same: got.body.equals(data) }).toEqual({
      put: 201,
      bytes: data.length,
      same: true,
    });
  });
});
