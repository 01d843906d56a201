import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { isBadRequest, isDeadlineExceeded, isNotFound, isWrongFileKind, SandboxClient, type Sandbox } from '@sandbox-scale/sdk';
import { describeTree, writeTree } from '@sandbox-scale/sdk/testing';
import { builtSdkPackage, eventually, freePort, runSuffix } from '../src/index';
import { runProcess, type RunResult } from '../src/system/run-command';
import { applyWarmPool, startSuiteSystem, waitPoolReady } from '../src/system/suite-system';
import type { SystemUnderTest, TenantCredentials } from '../src/system/system-under-test';
import { grantEditRole } from '../src/testing/tenant-role';

// A tenant holding exactly the chart's edit role uses what it claimed, through the Kubernetes
// API with its own credentials and no sandbox token: the SDK runs a Python file it wrote and
// reads back its output, a fork sees the file, a port-forward reaches a server the sandbox
// started; then the plugin (`kubectl sandbox exec`, `cp`, `port-forward`, found by kubectl on
// PATH) does the same from a shell; after release the sandbox's files are gone.

const suffix = runSuffix();
const ns = `dpsdk-${suffix}`;
const HELLO = ['import pathlib', "pathlib.Path('out.txt').write_text('hello from ' + 'python\\n')", ''].join('\n');

let sys: SystemUnderTest;
let tenant: TenantCredentials;
let client: SandboxClient;
let sb: Sandbox;
let dir: string;
let pathDir: string;
/** The guest port the sandbox's HTTP server listens on (the simulator relays it to this host). */
let httpPort: number;
/** pid of that server, on the local target only: ended in afterAll if release did not. */
let httpPid: number | undefined;

/** `kubectl sandbox ARGS` as the tenant: kubectl finds the plugin on PATH. */
function plugin(args: string[]): Promise<RunResult> {
  return runProcess(join(sys.binDir, 'kubectl'), ['sandbox', ...args], {
    PATH: `${pathDir}${delimiter}${process.env.PATH ?? ''}`,
    KUBECONFIG: tenant.path,
  });
}

/** GET http://address/path through a forward, retried until the server the sandbox started answers. */
async function fetchThrough(address: string, path: string): Promise<{ status: number; body: string }> {
  return eventually(
    async () => {
      const res = await fetch(`http://${address}${path}`);
      return { status: res.status, body: await res.text() };
    },
    { timeoutMs: 30_000, intervalMs: 200 },
  );
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'data-plane-sdk-'));
  pathDir = join(dir, 'bin');
  mkdirSync(pathDir);
  symlinkSync((await builtSdkPackage()).bin, join(pathDir, 'kubectl-sandbox'));
  sys = await startSuiteSystem({ namespaces: [ns], local: { nodes: 1, speed: 0, publishInterval: '1s' } });
  tenant = await sys.tenant(ns, 'editor');
  await grantEditRole(sys.kubeConfig, ns, 'editor');
  await applyWarmPool(sys, ns, { image: 'ghcr.io/example/python-agent:1', replicas: 3 });
  await waitPoolReady(sys, ns, 2, { atLeast: true, timeoutMs: 120_000 });
  client = new SandboxClient({ kubeConfig: tenant.kubeConfig, namespace: ns });
  sb = await client.claim({ pool: 'agent', timeoutMs: 120_000 });
  httpPort = await freePort();
}, 300_000);

afterAll(async () => {
  if (httpPid !== undefined && sys?.target === 'local') {
    try {
      process.kill(httpPid, 'SIGTERM');
    } catch {
      // release ended it, as it should
    }
  }
  await sys?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 120_000);

describe('the data plane through the SDK, as a tenant with the edit role', () => {
  it('writes a Python file, runs it, and reads back the file it wrote', async () => {
    const written = await sb.files.write('/work/hello.py', HELLO);
    expect(written).toMatchObject({ type: 'file', size: Buffer.byteLength(HELLO) });
    expect((await sb.files.read('/work/hello.py')).toString()).toBe(HELLO);

    // the simulator runs real host processes: argv is not translated, the working directory is
    const run = await sb.exec(['python3', 'hello.py'], { cwd: '/work' });
    expect(run).toEqual({ exitCode: 0, stdout: '', stderr: '' });
    expect((await sb.files.read('/work/out.txt')).toString()).toBe('hello from python\n');
    const listed = await sb.files.list('/work');
    expect(listed.map((e) => [e.name, e.kind, e.size]).sort()).toEqual([
      ['hello.py', 'file', Buffer.byteLength(HELLO)],
      ['out.txt', 'file', 18],
    ]);
    expect(await sb.files.stat('/work/out.txt')).toMatchObject({ type: 'file', size: 18 });
  });

  it('passes exit codes, output and environment through, and maps refusals to typed errors', async () => {
    const r = await sb.exec(['sh', '-c', 'echo "$GREETING"; echo oops >&2; exit 3'], { env: { GREETING: 'hi there' } });
    expect(r).toEqual({ exitCode: 3, stdout: 'hi there\n', stderr: 'oops\n' });

    const missing: unknown = await sb.exec(['no-such-command-here']).catch((e: unknown) => e);
    expect(isBadRequest(missing)).toBe(true);
    expect((missing as Error).message).toContain(sb.name);

    const slow: unknown = await sb.exec(['sleep', '30'], { timeoutMs: 1000 }).catch((e: unknown) => e);
    expect(isDeadlineExceeded(slow)).toBe(true);

    const notAFile: unknown = await sb.files.read('/work').catch((e: unknown) => e);
    expect(isWrongFileKind(notAFile)).toBe(true);
    expect(isNotFound(await sb.files.read('/work/nope.txt').catch((e: unknown) => e))).toBe(true);

    await sb.files.write('/work/tmp/gone.txt', 'x');
    await sb.files.remove('/work/tmp', { recursive: true });
    expect(isNotFound(await sb.files.stat('/work/tmp').catch((e: unknown) => e))).toBe(true);
  });

  it('forks, and the child sees the file the parent wrote', async () => {
    const [child] = await sb.fork({ count: 1 });
    expect(child?.name).toBeTruthy();
    const forked = client.sandbox(child?.name ?? '', ns);
    try {
      const text = await eventually(async () => (await forked.files.read('/work/out.txt')).toString(), {
        timeoutMs: 60_000,
        intervalMs: 500,
        retryOn: isNotFound,
      });
      expect(text).toBe('hello from python\n');
      // the child's files are its own from the fork on
      await forked.files.write('/work/child-only.txt', 'child');
      expect(isNotFound(await sb.files.stat('/work/child-only.txt').catch((e: unknown) => e))).toBe(true);
    } finally {
      await forked.release();
    }
  });

  it('forwards a local port to an HTTP server the sandbox started', async () => {
    const started = await sb.exec(['sh', '-c', `nohup python3 -m http.server ${httpPort} --bind 127.0.0.1 >/dev/null 2>&1 & echo $!`], {
      cwd: '/work',
    });
    expect(started.exitCode).toBe(0);
    httpPid = Number(started.stdout.trim());
    const pf = await sb.forward(httpPort);
    try {
      expect(pf.address).toBe(`127.0.0.1:${pf.localPort}`);
      const got = await fetchThrough(pf.address, '/out.txt');
      expect(got).toEqual({ status: 200, body: 'hello from python\n' });
      // every connection is a relay of its own
      const again = await fetch(`http://${pf.address}/hello.py`);
      expect({ status: again.status, body: await again.text() }).toEqual({ status: 200, body: HELLO });
      // a client that half-closes after its request still reads the whole answer
      const raw = connect({ port: pf.localPort, host: '127.0.0.1' });
      await once(raw, 'connect');
      raw.end('GET /out.txt HTTP/1.0\r\n\r\n');
      const chunks: Buffer[] = [];
      for await (const c of raw as AsyncIterable<Buffer>) chunks.push(c);
      const answer = Buffer.concat(chunks).toString();
      expect(answer).toMatch(/^HTTP\/1\.0 200 /);
      expect(answer.endsWith('\r\n\r\nhello from python\n')).toBe(true);
    } finally {
      await pf.close();
    }
    const refused = connect({ port: pf.localPort, host: '127.0.0.1' });
    expect(((await once(refused, 'error')) as [NodeJS.ErrnoException])[0].code).toBe('ECONNREFUSED');
  });
});

describe('the plugin, as the same tenant', () => {
  it("exec prints stdout and stderr to their streams and exits with the command's code", async () => {
    const r = await plugin(['exec', sb.name, '-n', ns, '--', 'sh', '-c', 'echo out; echo err >&2; exit 7']);
    expect(r).toEqual({ code: 7, stdout: 'out\n', stderr: 'err\n' });
    const ok = await plugin(['exec', sb.name, '-n', ns, '--cwd', '/work', '--', 'cat', 'out.txt']);
    expect(ok).toEqual({ code: 0, stdout: 'hello from python\n', stderr: '' });
    const timedOut = await plugin(['exec', sb.name, '-n', ns, '--timeout', '1s', '--', 'sleep', '30']);
    expect(timedOut.code).toBe(1);
    expect(timedOut.stderr).toMatch(/^error: create sandboxes\/exec\.agents\.x-k8s\.io .*HTTP 504/);
  });

  it('cp copies a directory in and out byte for byte: a nested and an empty directory, a 0755 file', async () => {
    const src = join(dir, 'tree');
    writeTree(src, {
      'a.txt': 'alpha\n',
      empty: { dir: true },
      'nested/deeper/blob.bin': randomBytes(300_000),
      'run.sh': { data: '#!/bin/sh\necho ran\n', mode: 0o755 },
    });

    const up = await plugin(['cp', src, `${sb.name}:/work/tree`, '-n', ns]);
    expect(up).toEqual({ code: 0, stdout: '', stderr: '' });
    const ran = await sb.exec(['sh', 'run.sh'], { cwd: '/work/tree' });
    expect(ran).toEqual({ exitCode: 0, stdout: 'ran\n', stderr: '' });
    expect((await sb.files.stat('/work/tree/run.sh')).mode & 0o777).toBe(0o755);

    const back = join(dir, 'back');
    const down = await plugin(['cp', `${sb.name}:/work/tree`, back, '-n', ns]);
    expect(down).toEqual({ code: 0, stdout: '', stderr: '' });
    expect(describeTree(back)).toEqual(describeTree(src));

    // a single file both ways, into an existing directory
    const file = await plugin(['cp', `${ns}/${sb.name}:/work/out.txt`, `${dir}/`]);
    expect(file.code).toBe(0);
    expect(readFileSync(join(dir, 'out.txt'), 'utf8')).toBe('hello from python\n');
    const missing = await plugin(['cp', `${sb.name}:/work/no-such-dir`, join(dir, 'x'), '-n', ns]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^error: not found: get sandboxes\/files/);
  });

  it('port-forward prints the address it listens on, relays, and stops with exit code 0 on SIGINT', async () => {
    const child = spawn(join(sys.binDir, 'kubectl'), ['sandbox', 'port-forward', sb.name, `:${httpPort}`, '-n', ns], {
      env: { ...process.env, PATH: `${pathDir}${delimiter}${process.env.PATH ?? ''}`, KUBECONFIG: tenant.path },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    try {
      const localPort = await eventually(
        () => {
          const m = /^Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)\n$/.exec(stdout);
          if (!m) throw new Error(`no address printed yet: ${JSON.stringify({ stdout, stderr })}`);
          expect(Number(m[2])).toBe(httpPort);
          return Number(m[1]);
        },
        { timeoutMs: 60_000, intervalMs: 100 },
      );
      expect(await fetchThrough(`127.0.0.1:${localPort}`, '/out.txt')).toEqual({ status: 200, body: 'hello from python\n' });
      child.kill('SIGINT');
      const [code, signal] = await exited;
      expect({ code, signal, stderr }).toEqual({ code: 0, signal: null, stderr: '' });
      const refused = connect({ port: localPort, host: '127.0.0.1' });
      expect(((await once(refused, 'error')) as [NodeJS.ErrnoException])[0].code).toBe('ECONNREFUSED');
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});

describe('release', () => {
  it('gives the sandbox back, after which its files and exec answer 404 NotFound', async () => {
    expect(await sb.release()).toBe(true);
    const gone = client.sandbox(sb.name, ns);
    await eventually(
      async () => {
        const read: unknown = await gone.files.read('/work/out.txt').catch((e: unknown) => e);
        if (!isNotFound(read)) throw new Error(`files still answer: ${String(read)}`);
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    const exec: unknown = await gone.exec(['true']).catch((e: unknown) => e);
    expect(isNotFound(exec)).toBe(true);
    const pluginExec = await plugin(['exec', sb.name, '-n', ns, '--', 'true']);
    expect(pluginExec.code).toBe(1);
    expect(pluginExec.stderr).toMatch(/^error: not found: create sandboxes\/exec/);
  });
});
