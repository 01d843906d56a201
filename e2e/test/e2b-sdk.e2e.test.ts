import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request, type Dispatcher } from 'undici';
import { z } from 'zod';
import { builtSdkPackage, kubectlOk, runSuffix } from '../src/index';
import { runProcess } from '../src/system/run-command';
import { applyWarmPool, startSuiteSystem, waitPoolReady } from '../src/system/suite-system';
import type { SystemUnderTest, TenantCredentials } from '../src/system/system-under-test';
import { grantEditRole } from '../src/testing/tenant-role';
import { E2B_PYTHON_SDK, pythonVenv } from '../src/testing/upstream-python';

// e2b's own JS SDK (npm `e2b`, unmodified) against sandbox-apiserver's e2b listener, as an agent
// builder runs it, locally and on the installed chart (its e2b Service, over HTTPS with the chart's
// CA): E2B_API_URL and E2B_SANDBOX_URL set to the listener, a ServiceAccount token
// holding exactly the chart's edit role as E2B_API_KEY. It creates a sandbox from a warm pool (a
// SandboxClaim the tenant made), runs commands (output, a failing exit, a background command it
// kills), moves files, lists, pauses and resumes, moves the timeout and kills; the sandbox is a
// Sandbox kubectl lists. e2b's Python SDK does the same, and a create sent again with its
// Idempotency-Key answers the first's sandbox. Another namespace's key and a bad key are
// refused, and a key kubectl sandbox e2b-key mints works.

const suffix = runSuffix();
const ns = `e2b-${suffix}`;
const other = `e2bo-${suffix}`;
let sys: SystemUnderTest;
let tenant: TenantCredentials;
let stranger: TenantCredentials;
let e2bUrl: string;
let python: string;
/** On the installed chart: the chart's CA, a hosts file naming the e2b Service, and how a raw request reaches it. */
let caFile: string | undefined;
let hostsFile: string | undefined;
let raw: { origin: string; dispatcher?: Agent };

/**
 * A process of an SDK: where the URL's host name is one only cluster DNS answers, the process
 * alone sees it in an /etc/hosts of its own (a mount namespace), as a pod's resolver would answer
 * it; the chart's CA is trusted as each SDK reads it.
 */
function sdkProcess(bin: string, args: string[], env: Record<string, string>): ReturnType<typeof runProcess> {
  const tls: Record<string, string> = caFile !== undefined ? { NODE_EXTRA_CA_CERTS: caFile, SSL_CERT_FILE: caFile } : {};
  if (hostsFile === undefined) return runProcess(bin, args, { ...env, ...tls });
  return runProcess('unshare', ['-m', 'sh', '-c', 'mount --bind "$0" /etc/hosts && exec "$@"', hostsFile, bin, ...args], {
    ...env,
    ...tls,
  });
}

/** A raw HTTP request to the listener, as the SDKs would send it. */
function rawRequest(path: string, o: Omit<Dispatcher.RequestOptions, 'origin' | 'path'>): ReturnType<typeof request> {
  return request(`${raw.origin}${path}`, { ...o, ...(raw.dispatcher !== undefined ? { dispatcher: raw.dispatcher } : {}) });
}

/** A program as an agent builder writes it with e2b's SDK, run by node from the repository (where `e2b` is installed). */
async function e2b(program: string, apiKey: string): Promise<unknown> {
  // an ES module given on the command line resolves 'e2b' from the working directory: the repository's node_modules
  const r = await sdkProcess('node', ['--input-type=module', '-e', program], {
    E2B_API_KEY: apiKey,
    E2B_API_URL: e2bUrl,
    E2B_SANDBOX_URL: e2bUrl,
  });
  if (r.code !== 0) throw new Error(`the e2b program exited ${r.code}: ${r.stderr}`);
  const last = r.stdout.trim().split('\n').pop() ?? '';
  return JSON.parse(last) as unknown;
}

/** The same with e2b's Python SDK, from its own venv. */
async function e2bPython(program: string, apiKey: string): Promise<unknown> {
  const r = await sdkProcess(python, ['-c', program], { E2B_API_KEY: apiKey, E2B_API_URL: e2bUrl, E2B_SANDBOX_URL: e2bUrl });
  if (r.code !== 0) throw new Error(`the e2b Python program exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop() ?? '') as unknown;
}

const PYTHON_LIFECYCLE = `
import json
from e2b import Sandbox
from e2b.sandbox.commands.command_handle import CommandExitException
out = {}
sbx = Sandbox.create('agent', timeout=300)
out['id'] = sbx.sandbox_id
r = sbx.commands.run('echo hello-python; echo to-stderr >&2')
out.update(stdout=r.stdout, stderr=r.stderr, exitCode=r.exit_code)
try:
    sbx.commands.run('exit 4')
    out['failedExit'] = 0
except CommandExitException as e:
    out['failedExit'] = e.exit_code
sbx.files.write('/work/py/a.txt', 'written by python')
out['read'] = sbx.files.read('/work/py/a.txt')
out['list'] = sorted(e.name for e in sbx.files.list('/work/py'))
out['exists'] = sbx.files.exists('/work/py/a.txt')
out['missing'] = sbx.files.exists('/work/py/none.txt')
out['made'] = sbx.files.make_dir('/work/py/d')
out['madeAgain'] = sbx.files.make_dir('/work/py/d')
out['running'] = sbx.is_running()
# the synchronous watcher polls (CreateWatcher, GetWatcherEvents, RemoveWatcher)
import time
w = sbx.files.watch_dir('/work/py')
sbx.files.write('/work/py/b.txt', 'x')
events = []
for _ in range(100):
    events += [e.type.value + ':' + e.name for e in w.get_new_events()]
    if 'create:b.txt' in events:
        break
    time.sleep(0.05)
w.stop()
out['watched'] = 'create:b.txt' in events
h = sbx.commands.run('read line; echo "got $line"', background=True, stdin=True)
sbx.commands.send_stdin(h.pid, 'from-python\\n')
out['talked'] = h.wait().stdout
sbx.set_timeout(600)
info = sbx.get_info()
out['state'] = info.state.value
out['template'] = info.template_id
out['listed'] = [s.sandbox_id for s in Sandbox.list().next_items()]
out['killed'] = sbx.kill()
out['killedAgain'] = Sandbox.kill(out['id'])
first = Sandbox.create('agent', timeout=300, idempotency_key='retry-1')
again = Sandbox.create('agent', timeout=300, idempotency_key='retry-1')
out['idempotent'] = first.sandbox_id == again.sandbox_id
out['idempotentKilled'] = first.kill()
print(json.dumps(out))
`;

const Lifecycle = z.object({
  id: z.string(),
  stdout: z.string(),
  stderr: z.string(),
  exitCode: z.number(),
  failedExit: z.number(),
  read: z.string(),
  list: z.array(z.string()),
  exists: z.boolean(),
  missing: z.boolean(),
  made: z.boolean(),
  madeAgain: z.boolean(),
  existsAfterRemove: z.boolean(),
  running: z.boolean(),
  killedBackground: z.boolean(),
  listedPids: z.boolean(),
  talked: z.string(),
  watchedTalk: z.string(),
  watched: z.boolean(),
  renamed: z.string(),
  backgroundExit: z.number(),
  state: z.string(),
  template: z.string(),
  paused: z.boolean(),
  pausedAgain: z.boolean(),
  snapshotNames: z.array(z.string()),
  snapshotsListed: z.boolean(),
  snapshotDeleted: z.boolean(),
  snapshotDeletedAgain: z.boolean(),
  metrics: z.number(),
  forkRun: z.string(),
  forkKilled: z.boolean(),
  envEcho: z.string(),
  cwdRead: z.string(),
  filtered: z.array(z.string()),
  filteredOut: z.array(z.string()),
  pausedState: z.string(),
  resumedState: z.string(),
  listed: z.array(z.string()),
  killed: z.boolean(),
  killedAgain: z.boolean(),
  runningAfterKill: z.boolean(),
});

const LIFECYCLE = `
import { Sandbox } from 'e2b';
const out = {};
const sbx = await Sandbox.create('agent', { timeoutMs: 300_000, metadata: { app: 'x y', suite: 'e2b' } });
out.id = sbx.sandboxId;
const r = await sbx.commands.run('echo hello-e2b; echo to-stderr >&2');
out.envEcho = (await sbx.commands.run('echo "$GREETING"', { envs: { GREETING: 'hi there' } })).stdout;
Object.assign(out, { stdout: r.stdout, stderr: r.stderr, exitCode: r.exitCode });
out.failedExit = await sbx.commands.run('exit 3').then(() => 0, (e) => e.exitCode);
await sbx.files.write('/work/e2b/a.txt', 'written by e2b');
out.read = await sbx.files.read('/work/e2b/a.txt');
out.cwdRead = (await sbx.commands.run('cat a.txt', { cwd: '/work/e2b' })).stdout;
out.list = (await sbx.files.list('/work/e2b')).map((e) => e.name).sort();
out.exists = await sbx.files.exists('/work/e2b/a.txt');
out.missing = await sbx.files.exists('/work/e2b/none.txt');
out.made = await sbx.files.makeDir('/work/e2b/d');
out.madeAgain = await sbx.files.makeDir('/work/e2b/d');
await sbx.files.remove('/work/e2b/a.txt');
out.existsAfterRemove = await sbx.files.exists('/work/e2b/a.txt');
out.running = await sbx.isRunning();
const bg = await sbx.commands.run('sleep 120', { background: true });
out.killedBackground = await bg.kill();
out.backgroundExit = await bg.wait().then((x) => x.exitCode, (e) => e.exitCode);
// output streams as it comes: the command blocks on its stdin until 'ready' has reached the caller
let sawReady;
const ready = new Promise((resolve) => (sawReady = resolve));
const talk = await sbx.commands.run('echo ready; read line; echo "got $line"', {
  background: true,
  stdin: true,
  onStdout: (d) => d.includes('ready') && sawReady(),
});
await ready;
out.listedPids = (await sbx.commands.list()).map((p) => p.pid).includes(talk.pid);
const watcher = await sbx.commands.connect(talk.pid);
await sbx.commands.sendStdin(talk.pid, 'hello\\n');
out.talked = (await talk.wait()).stdout;
out.watchedTalk = (await watcher.wait()).stdout;
// a directory watched while a file is written into it
await sbx.files.makeDir('/work/w');
let sawCreate;
const created = new Promise((resolve) => (sawCreate = resolve));
const watch = await sbx.files.watchDir('/work/w', (e) => e.type + ':' + e.name === 'create:new.txt' && sawCreate(true));
await sbx.files.write('/work/w/new.txt', 'x');
out.watched = await Promise.race([created, new Promise((resolve) => setTimeout(() => resolve(false), 10_000))]);
await watch.stop();
out.renamed = (await sbx.files.rename('/work/w/new.txt', '/work/w/moved.txt')).path;
await sbx.setTimeout(600_000);
const info = await sbx.getInfo();
out.state = info.state;
out.template = info.templateId;
out.paused = await sbx.pause();
out.pausedAgain = await sbx.pause();
out.pausedState = (await sbx.getInfo()).state;
const again = await Sandbox.connect(out.id);
out.resumedState = (await again.getInfo()).state;
out.listed = (await Sandbox.list().nextItems()).map((s) => s.sandboxId);
out.filtered = (await Sandbox.list({ query: { metadata: { app: 'x y' } } }).nextItems()).map((s) => s.sandboxId);
out.filteredOut = (await Sandbox.list({ query: { metadata: { app: 'other' } } }).nextItems()).map((s) => s.sandboxId);
const snap = await sbx.createSnapshot({ name: 'first' });
out.snapshotNames = snap.names;
out.snapshotsListed = (await sbx.listSnapshots().nextItems()).map((x) => x.snapshotId).includes(snap.snapshotId);
out.snapshotDeleted = await Sandbox.deleteSnapshot(snap.snapshotId);
out.snapshotDeletedAgain = await Sandbox.deleteSnapshot(snap.snapshotId);
out.metrics = (await sbx.getMetrics()).length;
const [child] = await sbx.fork({ count: 1 });
out.forkRun = child instanceof Error ? String(child) : (await child.commands.run('echo forked')).stdout;
out.forkKilled = child instanceof Error ? false : await child.kill();
out.killed = await sbx.kill();
out.killedAgain = await Sandbox.kill(out.id);
out.runningAfterKill = await sbx.isRunning().catch(() => false);
console.log(JSON.stringify(out));
`;

beforeAll(async () => {
  const venv = pythonVenv(mkdtempSync(join(tmpdir(), 'e2b-python-')), E2B_PYTHON_SDK);
  sys = await startSuiteSystem({ namespaces: [ns, other], local: { nodes: 1, speed: 0, publishInterval: '1s' } });
  const endpoint = await sys.e2bEndpoint();
  e2bUrl = endpoint.url;
  raw = { origin: e2bUrl };
  if (endpoint.address !== undefined) {
    const work = mkdtempSync(join(tmpdir(), 'e2b-tls-'));
    caFile = join(work, 'ca.crt');
    writeFileSync(caFile, sys.servingCa);
    const name = new URL(e2bUrl).hostname;
    hostsFile = join(work, 'hosts');
    writeFileSync(hostsFile, `127.0.0.1 localhost\n${endpoint.address} ${name}\n`);
    const origin = new URL(e2bUrl);
    origin.hostname = endpoint.address;
    raw = { origin: origin.origin, dispatcher: new Agent({ connect: { ca: sys.servingCa, servername: name } }) };
  }
  tenant = await sys.tenant(ns, 'editor');
  await grantEditRole(sys.kubeConfig, ns, 'editor');
  stranger = await sys.tenant(other, 'editor');
  await grantEditRole(sys.kubeConfig, other, 'editor');
  await applyWarmPool(sys, ns, { image: 'ghcr.io/example/python-agent:1', replicas: 2 });
  await waitPoolReady(sys, ns, 1, { atLeast: true, timeoutMs: 120_000 });
  python = await venv;
}, 300_000);

afterAll(async () => {
  await sys?.stop();
});

describe("e2b's JS SDK, unmodified, as a tenant with the edit role", () => {
  it('creates, runs, moves files, pauses, resumes and kills a sandbox', async () => {
    const out = Lifecycle.parse(await e2b(LIFECYCLE, tenant.token));
    expect(out).toMatchObject({
      stdout: 'hello-e2b\n',
      stderr: 'to-stderr\n',
      exitCode: 0,
      failedExit: 3,
      read: 'written by e2b',
      list: ['a.txt'],
      exists: true,
      missing: false,
      made: true,
      madeAgain: false,
      existsAfterRemove: false,
      running: true,
      killedBackground: true,
      listedPids: true,
      talked: 'ready\ngot hello\n',
      watchedTalk: 'got hello\n',
      watched: true,
      renamed: '/work/w/moved.txt',
      state: 'running',
      template: 'agent',
      paused: true,
      pausedAgain: false,
      snapshotNames: ['first'],
      snapshotsListed: true,
      snapshotDeleted: true,
      snapshotDeletedAgain: false,
      metrics: 1,
      forkRun: 'forked\n',
      forkKilled: true,
      envEcho: 'hi there\n',
      cwdRead: 'written by e2b',
      filteredOut: [],
      pausedState: 'paused',
      resumedState: 'running',
      killed: true,
      killedAgain: false,
      runningAfterKill: false,
    });
    expect(out.backgroundExit).not.toBe(0);
    expect(out.listed).toContain(out.id);
    expect(out.filtered).toEqual([out.id]);
    process.stdout.write(`[e2b-js] sandbox ${out.id} created, used and killed through e2b's SDK\n`);
  }, 300_000);

  it("does the same with e2b's Python SDK, unmodified", async () => {
    const out = z
      .object({ id: z.string(), listed: z.array(z.string()) })
      .passthrough()
      .parse(await e2bPython(PYTHON_LIFECYCLE, tenant.token));
    expect(out).toMatchObject({
      stdout: 'hello-python\n',
      stderr: 'to-stderr\n',
      exitCode: 0,
      failedExit: 4,
      read: 'written by python',
      list: ['a.txt'],
      exists: true,
      missing: false,
      made: true,
      madeAgain: false,
      running: true,
      watched: true,
      talked: 'got from-python\n',
      state: 'running',
      template: 'agent',
      killed: true,
      killedAgain: false,
      idempotent: true,
      idempotentKilled: true,
    });
    expect(out.listed).toContain(out.id);
    process.stdout.write(`[e2b-python] sandbox ${out.id} created, used and killed through e2b's Python SDK\n`);
  }, 300_000);

  it("serves e2b's older SDKs on the v1 paths (npm e2b 2.50)", async () => {
    const out = z.object({ id: z.string(), stdout: z.string(), killed: z.boolean(), killedAgain: z.boolean() }).parse(
      await e2b(
        `import { Sandbox } from 'e2b-v1';
const s = await Sandbox.create('agent');
const r = await s.commands.run('echo v1');
console.log(JSON.stringify({ id: s.sandboxId, stdout: r.stdout, killed: await s.kill(), killedAgain: await Sandbox.kill(s.sandboxId) }));`,
        tenant.token,
      ),
    );
    expect(out).toMatchObject({ stdout: 'v1\n', killed: true, killedAgain: false });
  }, 120_000);

  it("takes the key kubectl sandbox e2b-key mints, with the export lines e2b's SDKs read", async () => {
    const plugin = await runProcess((await builtSdkPackage()).bin, ['e2b-key', 'editor', '-n', ns, '--duration', '15m', '--url', e2bUrl], {
      KUBECONFIG: sys.kubeconfigPath,
    });
    expect({ code: plugin.code, stderr: plugin.stderr }).toEqual({ code: 0, stderr: '' });
    const lines = Object.fromEntries([...plugin.stdout.matchAll(/^export (\w+)=(\S+)$/gm)].map((m) => [m[1] ?? '', m[2] ?? '']));
    expect(Object.keys(lines).sort()).toEqual(['E2B_API_KEY', 'E2B_API_URL', 'E2B_SANDBOX_URL']);
    expect(lines).toMatchObject({ E2B_API_URL: e2bUrl, E2B_SANDBOX_URL: e2bUrl });
    // the minted key is the editor's: e2b's list answers it (a key Kubernetes refuses is an AuthenticationError)
    const listed = z
      .object({ list: z.string() })
      .parse(
        await e2b(
          `import { Sandbox } from 'e2b';\nconsole.log(JSON.stringify({ list: await Sandbox.list().nextItems().then(() => 'listed', (e) => e?.constructor?.name ?? String(e)) }));`,
          lines.E2B_API_KEY ?? '',
        ),
      );
    expect(listed.list).toBe('listed');
  }, 120_000);

  it('answers hostile requests with e2b error bodies, and acts on none of them', async () => {
    const call = async (
      method: 'GET' | 'POST',
      path: string,
      o: { key?: string; body?: string | Buffer; headers?: Record<string, string> } = {},
    ): Promise<{ status: number; body: unknown }> => {
      const r = await rawRequest(path, {
        method,
        headers: { 'content-type': 'application/json', ...(o.key !== undefined ? { 'x-api-key': o.key } : {}), ...(o.headers ?? {}) },
        ...(o.body !== undefined ? { body: o.body } : {}),
      });
      const text = await r.body.text();
      return { status: r.statusCode, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
    };
    const claimsBefore = (await kubectlOk(['get', 'sandboxclaims', '-n', ns, '-o', 'name'], { kubeconfig: tenant.path })).stdout;
    const refusals = [
      // no key at all
      { got: await call('GET', '/v2/sandboxes'), status: 401 },
      // a prototype key deep in the body
      {
        got: await call('POST', '/v2/sandboxes', { key: tenant.token, body: '{"templateID":"agent","metadata":{"__proto__":{"x":"y"}}}' }),
        status: 422,
      },
      { got: await call('POST', '/v2/sandboxes', { key: tenant.token, body: '{"templateID":' }), status: 400 },
      // a body past the control plane's bound
      { got: await call('POST', '/v2/sandboxes', { key: tenant.token, body: Buffer.alloc(2 * 1024 * 1024, 0x20) }), status: 400 },
      // envd with no sandbox named, and with one of another namespace's name
      {
        got: await call('POST', '/filesystem.Filesystem/Stat', { headers: { 'x-access-token': tenant.token }, body: '{"path":"/"}' }),
        status: 400,
      },
      { got: await call('GET', '/nowhere', { key: tenant.token }), status: 404 },
      // envd with no access token
      {
        got: await call('POST', '/filesystem.Filesystem/Stat', { headers: { 'e2b-sandbox-id': 'any' }, body: '{"path":"/"}' }),
        status: 401,
      },
    ];
    for (const r of refusals) {
      expect(r.got.status).toBe(r.status);
      expect(r.got.body).toMatchObject({ code: r.status, message: expect.any(String) as unknown });
    }
    expect((await kubectlOk(['get', 'sandboxclaims', '-n', ns, '-o', 'name'], { kubeconfig: tenant.path })).stdout).toBe(claimsBefore);
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  }, 120_000);

  it('refuses a key Kubernetes does not accept, and keeps tenants apart', async () => {
    const errorName = `const name = (e) => e?.constructor?.name ?? String(e);`;
    const bad = z
      .object({ list: z.string() })
      .parse(
        await e2b(
          `import { Sandbox } from 'e2b';\n${errorName}\nconsole.log(JSON.stringify({ list: await Sandbox.list().nextItems().then(() => 'listed', name) }));`,
          'not-a-token',
        ),
      );
    expect(bad.list).toBe('AuthenticationError');
    // made raw, as the SDK's create does, to hold each answer's envdAccessToken
    const created = async () => {
      const r = await rawRequest('/v2/sandboxes', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': tenant.token },
        body: '{"templateID":"agent"}',
      });
      expect(r.statusCode).toBe(201);
      const body = z.object({ sandboxID: z.string(), envdAccessToken: z.string() }).parse(await r.body.json());
      return { id: body.sandboxID, token: body.envdAccessToken };
    };
    const kept = await created();
    const sibling = await created();
    // the other tenant names that sandbox: not found in its own namespace, and not listed; its create finds no pool of its own
    const seen = z
      .object({
        connect: z.string(),
        kill: z.boolean(),
        info: z.string(),
        timeout: z.string(),
        list: z.array(z.string()),
        create: z.string(),
      })
      .parse(
        await e2b(
          `import { Sandbox } from 'e2b';
${errorName}
const out = {};
out.connect = await Sandbox.connect(${JSON.stringify(kept.id)}).then(() => 'connected', name);
out.kill = await Sandbox.kill(${JSON.stringify(kept.id)});
out.info = await Sandbox.getInfo(${JSON.stringify(kept.id)}).then(() => 'read', name);
out.timeout = await Sandbox.setTimeout(${JSON.stringify(kept.id)}, 60_000).then(() => 'set', name);
out.list = (await Sandbox.list().nextItems()).map((s) => s.sandboxId);
out.create = await Sandbox.create('agent').then(() => 'created', name);
console.log(JSON.stringify(out));`,
          stranger.token,
        ),
      );
    expect(seen).toEqual({
      connect: expect.stringMatching(/NotFound/) as unknown,
      kill: false,
      info: expect.stringMatching(/NotFound/) as unknown,
      timeout: expect.stringMatching(/NotFound/) as unknown,
      list: [],
      create: expect.not.stringMatching(/^created$/) as unknown,
    });
    // envd takes only the sandbox's own access token: not a tenant's key, not another sandbox's token
    const envdWith = async (token: string, id: string) => {
      const r = await rawRequest('/filesystem.Filesystem/Stat', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-access-token': token, 'e2b-sandbox-id': id },
        body: '{"path":"/"}',
      });
      return { status: r.statusCode, body: (await r.body.json()) as unknown };
    };
    for (const [token, id] of [
      [stranger.token, kept.id],
      [tenant.token, kept.id],
      [sibling.token, kept.id],
      [kept.token, sibling.id],
    ] as const)
      expect(await envdWith(token, id)).toMatchObject({ status: 401, body: { code: 401 } });
    expect(await envdWith(kept.token, kept.id)).toMatchObject({ status: 200, body: { entry: { type: 'FILE_TYPE_DIRECTORY' } } });
    // the owner reaches it again from a fresh process, and runs a command
    const again = z
      .object({ out: z.string() })
      .parse(
        await e2b(
          `import { Sandbox } from 'e2b';\nconst s = await Sandbox.connect(${JSON.stringify(kept.id)});\nconsole.log(JSON.stringify({ out: (await s.commands.run('echo again')).stdout }));`,
          tenant.token,
        ),
      );
    expect(again.out).toBe('again\n');
    // what e2b made is a Sandbox kubectl lists, and deleting it there ends it for e2b too
    const listed = await kubectlOk(['get', 'sandboxes', '-n', ns, '-o', 'name'], { kubeconfig: tenant.path });
    expect(listed.stdout.split('\n')).toContain(`sandbox.agents.x-k8s.io/${kept.id}`);
    await kubectlOk(['delete', 'sandbox', kept.id, '-n', ns], { kubeconfig: tenant.path });
    const after = z.object({ running: z.boolean(), connect: z.string() }).parse(
      await e2b(
        `import { Sandbox } from 'e2b';
${errorName}
const running = await Sandbox.getInfo(${JSON.stringify(kept.id)}).then(() => true, () => false);
console.log(JSON.stringify({ running, connect: await Sandbox.connect(${JSON.stringify(kept.id)}).then(() => 'connected', name) }));`,
        tenant.token,
      ),
    );
    expect(after).toEqual({ running: false, connect: expect.stringMatching(/NotFound/) as unknown });
  }, 300_000);
});
