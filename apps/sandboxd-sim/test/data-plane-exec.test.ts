import { existsSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { asSandboxdHttpError, EXEC_OUTPUT_LIMIT_BYTES, type ExecResult } from '@sandbox-scale/sandboxd-client';
import { caught, eventually, hasEnded, raw, ROOT, startDataSim, type DataSim } from './helpers';

const statusOf = (err: unknown): number | undefined => asSandboxdHttpError(err)?.statusCode;

describe('POST /v1/sandboxes/{id}/exec', () => {
  let t: DataSim;
  let sb: { id: string; token: string };
  const exec = (argv: string[], more: { cwd?: string; env?: Record<string, string>; timeoutSeconds?: number } = {}, signal?: AbortSignal) =>
    t.root().exec(sb.id, sb.token, { argv, ...more }, signal ? { signal } : {});

  beforeAll(async () => {
    t = await startDataSim();
    sb = await t.claim();
  });
  afterAll(() => t.close());

  it('runs a real command and returns its stdout and exit code', async () => {
    await expect(exec(['echo', 'hi'])).resolves.toEqual({ exitCode: 0, stdout: 'hi\n', stderr: '' });
  });

  it('returns a non-zero exit as a result, with stderr', async () => {
    await expect(exec(['sh', '-c', 'echo oops >&2; exit 3'])).resolves.toEqual({ exitCode: 3, stdout: '', stderr: 'oops\n' });
  });

  it('runs in the sandbox root, or in the guest path given as cwd', async () => {
    const root = realpathSync(t.rootOf(sb.id));
    expect((await exec(['pwd'])).stdout).toBe(`${root}\n`);
    await exec(['mkdir', '-p', 'work/sub']);
    expect((await exec(['pwd'], { cwd: '/work/sub' })).stdout).toBe(`${join(root, 'work/sub')}\n`);
  });

  it("clears the environment to PATH, TERM and proxy variables plus the caller's env", async () => {
    process.env.SIM_TEST_SECRET = 'must-not-leak';
    try {
      const { stdout } = await exec(['env'], { env: { CI: '1' } });
      const names = stdout
        .trim()
        .split('\n')
        .map((l) => l.slice(0, l.indexOf('=')));
      expect(names).toContain('CI');
      expect(names).toContain('PATH');
      expect(stdout).not.toContain('must-not-leak');
      const allowed = /^(PATH|TERM|CI|PWD|SHLVL|_|(HTTPS?|NO|ALL)_PROXY|(https?|no|all)_proxy)$/;
      expect(names.filter((n) => !allowed.test(n))).toEqual([]);
    } finally {
      delete process.env.SIM_TEST_SECRET;
    }
  });

  it('answers once the command exits, though a process it left in the background holds its output open', async () => {
    const r = await exec(['sh', '-c', 'sleep 1000 & echo $! > bg.pid; echo started']);
    expect(r).toEqual({ exitCode: 0, stdout: 'started\n', stderr: '' });
    const pid = Number(readFileSync(join(t.rootOf(sb.id), 'bg.pid'), 'utf8'));
    expect(hasEnded(pid)).toBe(false);
  });

  it('turns output that is not UTF-8 into U+FFFD', async () => {
    expect((await exec(['printf', '\\377ok'])).stdout).toBe('\uFFFDok');
  });

  it('kills the command at timeout_seconds and answers 504', async () => {
    const err = await caught(exec(['sh', '-c', 'echo $$ > timeout.pid; exec sleep 1000'], { timeoutSeconds: 1 }));
    expect(statusOf(err)).toBe(504);
    const pid = Number(readFileSync(join(t.rootOf(sb.id), 'timeout.pid'), 'utf8'));
    expect(pid).toBeGreaterThan(0);
    await eventually(() => hasEnded(pid));
  });

  it('kills the command past 8 MiB of output and answers 413', async () => {
    const err = await caught(exec(['head', '-c', String(EXEC_OUTPUT_LIMIT_BYTES + 1), '/dev/zero']));
    expect(statusOf(err)).toBe(413);
  });

  it('kills the command when the caller hangs up', async () => {
    const pidFile = join(t.rootOf(sb.id), 'hangup.pid');
    const ac = new AbortController();
    const call = caught(exec(['sh', '-c', 'echo $$ > hangup.pid.tmp; mv hangup.pid.tmp hangup.pid; exec sleep 1000'], {}, ac.signal));
    await eventually(() => existsSync(pidFile));
    const pid = Number(readFileSync(pidFile, 'utf8'));
    expect(hasEnded(pid)).toBe(false);
    ac.abort();
    await call;
    await eventually(() => hasEnded(pid));
  });

  it.each([
    ['a missing command', ['no-such-command-here'], {}, /command not found/],
    ['a cwd that does not exist', ['true'], { cwd: '/nope' }, /cwd does not exist/],
    ['a cwd escaping the root', ['true'], { cwd: '/../..' }, /escapes/],
  ])('answers 400 for %s', async (_what, argv, more, message) => {
    const err = await caught(exec(argv, more));
    expect(statusOf(err)).toBe(400);
    expect(asSandboxdHttpError(err)?.message).toMatch(message);
  });

  it('answers 400 for a command that is not executable', async () => {
    writeFileSync(join(t.rootOf(sb.id), 'script.sh'), '#!/bin/sh\necho no\n', { mode: 0o644 });
    const err = await caught(exec(['./script.sh']));
    expect(statusOf(err)).toBe(400);
    expect(asSandboxdHttpError(err)?.message).toMatch(/not executable/);
  });

  it.each([
    ['an unknown field', { argv: ['true'], bogus: 1 }, /unknown field "bogus"/],
    ['an empty argv', { argv: [] }, /argv/],
    ['a negative timeout', { argv: ['true'], timeout_seconds: -1 }, /timeout_seconds/],
    ['a prototype key', JSON.parse('{"argv":["true"],"env":{"__proto__":{"x":"1"}}}') as object, /prototype/],
  ])('answers 400 for %s in the body', async (_what, body, message) => {
    const r = await raw(t.url(), 'POST', `/v1/sandboxes/${sb.id}/exec`, { token: sb.token, body: JSON.stringify(body) });
    expect(r.status).toBe(400);
    expect((r.json as { error: string }).error).toMatch(message);
  });

  it('answers 401 without a bearer, 404 for a wrong token or an unknown id, and lets the root token act by id', async () => {
    const none = await raw(t.url(), 'POST', `/v1/sandboxes/${sb.id}/exec`, { body: '{"argv":["true"]}' });
    expect(none.status).toBe(401);
    expect(statusOf(await caught(t.root().exec(sb.id, 'wrong-token', { argv: ['true'] })))).toBe(404);
    expect(statusOf(await caught(t.root().exec('sb_0000000000000000', sb.token, { argv: ['true'] })))).toBe(404);
    await expect(t.root().exec(sb.id, ROOT, { argv: ['true'] })).resolves.toMatchObject({ exitCode: 0 });
  });

  it('answers 409 for a failed sandbox', async () => {
    t.sim.node('node-0').setFaults({ failedSandboxes: [sb.id] });
    try {
      expect(statusOf(await caught(exec(['true'])))).toBe(409);
    } finally {
      t.sim.node('node-0').clearFaults();
    }
  });

  // nine commands producing 71 MB take seconds on a loaded machine, hence the longer bound
  it('answers 503 with Retry-After 1 when buffered output of the execs in flight passes 64 MiB', async () => {
    // nine commands each hold 7.9 MB until `go` appears: together they pass 64 MiB
    const hold = ['sh', '-c', "head -c 7900000 /dev/zero | tr '\\0' a; while [ ! -e go ]; do sleep 0.05; done"];
    const calls = Array.from({ length: 9 }, () =>
      exec(hold).then(
        (r): ExecResult | unknown => r,
        (err: unknown) => err,
      ),
    );
    const refused = await Promise.race(calls.map((c) => c.then((r) => (statusOf(r) === 503 ? r : new Promise<never>(() => undefined)))));
    expect(asSandboxdHttpError(refused)?.retryAfterSeconds).toBe(1);
    writeFileSync(join(t.rootOf(sb.id), 'go'), '');
    const results = await Promise.all(calls);
    const done = results.filter((r): r is ExecResult => statusOf(r) === undefined);
    // every other call was refused the same way, and each that ran got its whole output
    expect(results.filter((r) => statusOf(r) === 503)).toHaveLength(9 - done.length);
    expect(done.length).toBeGreaterThan(0);
    expect(done.length).toBeLessThan(9);
    expect(done.map((r) => r.stdout.length)).toEqual(Array(done.length).fill(7_900_000));
  }, 60_000);
});
