import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { eventually } from '../src/index';

// Runs the README's "what to try next" commands, as written, against the real `npm start`: the
// block between the readme-test markers is the test, so the README cannot drift from what works.
const root = resolve(__dirname, '../..');
const START_DEADLINE_MS = 240_000;

function readmeCommands(): string[] {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const block = /<!-- readme-test:begin -->([\s\S]*?)<!-- readme-test:end -->/.exec(readme)?.[1];
  if (block === undefined) throw new Error('README.md has no readme-test block');
  const fenced = [...block.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
  // a trailing `  # …` is the reader's note, not part of the command
  return fenced
    .flatMap((f) => f.split('\n'))
    .map((l) => l.replace(/\s+#\s.*$/, ''))
    .filter((l) => l.trim() !== '');
}

/** Whether any process of the group is left (signal 0 checks without sending anything). */
function processGroupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Everything npm start printed on stdout and on stderr so far. */
let startOutput = '';
let startErrors = '';

const reasonOf: Record<number, string> = { 403: 'Forbidden', 404: 'NotFound', 503: 'ServiceUnavailable' };

/** A Sandbox of a template no warm pool keeps warm: the API answers 503 NoWarmCapacity with Retry-After. */
const unwarmedSandbox = {
  apiVersion: 'agents.x-k8s.io/v1beta1',
  kind: 'Sandbox',
  metadata: { name: 'unwarmed', namespace: 'default' },
  spec: {
    podTemplate: {
      spec: {
        containers: [
          { name: 'agent', image: 'ghcr.io/example/nobody-warms-this:1.0', resources: { requests: { cpu: '1', memory: '1Gi' } } },
        ],
      },
    },
  },
};

function waitForLine(child: ChildProcess, pattern: RegExp, deadlineMs: number): Promise<RegExpExecArray> {
  return new Promise((ok, fail) => {
    let seen = '';
    child.stdout?.on('data', (chunk: Buffer) => (startOutput += chunk.toString()));
    const timer = setTimeout(() => fail(new Error(`no ${pattern} within ${deadlineMs} ms:\n${seen.slice(-2000)}`)), deadlineMs);
    const onData = (chunk: Buffer): void => {
      seen += chunk.toString();
      const m = pattern.exec(seen);
      if (m) {
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        ok(m);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (c: Buffer) => {
      seen += c.toString();
      startErrors += c.toString();
    });
    child.once('exit', (code) => fail(new Error(`npm start exited (${code}) before ${pattern}:\n${seen.slice(-2000)}`)));
  });
}

describe('README quick start against npm start', () => {
  let start: ChildProcess | undefined;

  afterAll(async () => {
    if (start?.pid === undefined || start.exitCode !== null || start.signalCode !== null) return;
    const exited = new Promise<void>((ok) => start?.once('exit', () => ok()));
    process.kill(-start.pid, 'SIGINT'); // Ctrl-C reaches the whole foreground group
    await exited;
  });

  it('runs every command of the README block as written', async () => {
    const commands = readmeCommands();
    expect(commands.length).toBeGreaterThanOrEqual(5);
    start = spawn('npm', ['start'], { cwd: root, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    // the last of npm start's export lines: once it is printed, every one before it is too
    await waitForLine(start, /^export SANDBOX_SCALE_ROUTER_URL=https:\/\/\S+$/m, START_DEADLINE_MS);
    const printed = Object.fromEntries([...startOutput.matchAll(/^export (\w+)=(\S+)$/gm)].map((m) => [m[1] ?? '', m[2] ?? '']));
    expect(Object.keys(printed).sort()).toEqual([
      'E2B_API_URL',
      'E2B_SANDBOX_URL',
      'KUBECONFIG',
      'SANDBOX_SCALE_FAST_PATH_CA_FILE',
      'SANDBOX_SCALE_FAST_PATH_URL',
      'SANDBOX_SCALE_ROUTER_CA_FILE',
      'SANDBOX_SCALE_ROUTER_URL',
    ]);
    const env: NodeJS.ProcessEnv = { ...process.env, ...printed };
    let name: string | undefined;
    const claimedNames: string[] = [];
    for (const line of commands) {
      const command = name === undefined ? line : line.replace(/\bNAME\b/g, name);
      if (/\bNAME\b/.test(command)) throw new Error(`no claim name yet for: ${line}`);
      // an export line changes the environment of the commands after it, as in a shell
      const exported = /^export (\w+)=/.exec(command);
      const script = exported ? `${command}\nprintf %s "$${exported[1]}"` : command;
      const ran = spawnSync('sh', ['-c', script], { cwd: root, env, encoding: 'utf8', timeout: 120_000 });
      if (ran.status !== 0) throw new Error(`\`${command}\` exited ${ran.status}:\n${ran.stdout}${ran.stderr}`);
      if (exported?.[1] !== undefined) env[exported[1]] = ran.stdout;
      // e2b's SDK ran its command in a sandbox of the python-agent pool and printed its output
      if (command.includes("from 'e2b'")) expect(ran.stdout.trim()).toBe('hi');
      const claimed = /^sandbox\/(\S+) claimed\b/m.exec(ran.stdout);
      if (claimed?.[1] !== undefined) claimedNames.push((name = claimed[1]));
    }
    // the SandboxClaim path and the fast path each claimed one sandbox, and both were released
    expect(claimedNames).toHaveLength(2);
    for (const n of claimedNames) expect(n).toMatch(/^python-agent-/);
    const left = spawnSync('kubectl', ['get', 'sandboxclaims', '-n', 'default', '-o', 'name'], { env, encoding: 'utf8' });
    expect(left.status).toBe(0);
    expect(left.stdout.split('\n').filter((l) => claimedNames.some((n) => l.endsWith(`/${n}`)))).toEqual([]);
    // answers the API means to give are not errors: a sandbox that does not exist (404), one whose
    // pool nobody keeps warm (503 with Retry-After), a command past its timeout (504), a denied
    // caller (403). The apps' logs hold no error line for any of them.
    const provoked = [
      { code: 404, args: ['get', 'sandbox', 'no-such-sandbox'] },
      { code: 503, args: ['create', '-f', '-'], input: JSON.stringify(unwarmedSandbox) },
      { code: 403, args: ['get', 'sandboxes', '--as', 'system:serviceaccount:default:nobody'] },
    ];
    for (const p of provoked) {
      const ran = spawnSync('kubectl', p.args, { cwd: root, env, encoding: 'utf8', input: p.input ?? '' });
      expect({ args: p.args, status: ran.status, said: ran.stderr.includes(`(${reasonOf[p.code] ?? ''})`) }).toEqual({
        args: p.args,
        status: 1,
        said: true,
      });
    }
    const timedOut = spawnSync('kubectl', ['sandbox', 'exec', 'agent-1', '--timeout', '1s', '--', 'sleep', '5'], {
      cwd: root,
      env,
      encoding: 'utf8',
    });
    expect(timedOut.status).not.toBe(0);
    const logDir = /app logs in (\S+)/.exec(startErrors)?.[1];
    if (logDir === undefined) throw new Error(`npm start named no log directory:\n${startErrors.slice(-2000)}`);
    const errorLines = readdirSync(logDir)
      .filter((f) => f.endsWith('.log'))
      .flatMap((f) =>
        readFileSync(join(logDir, f), 'utf8')
          .split('\n')
          .filter((l) => l.includes('"level":"error"') || l.includes('"level":"fatal"'))
          .map((l) => `${f}: ${l.slice(0, 300)}`),
      );
    expect(errorLines).toEqual([]);
    const pid = start.pid;
    if (pid === undefined) throw new Error('npm start has no pid');
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((ok) =>
      start?.once('exit', (code, signal) => ok({ code, signal })),
    );
    process.kill(-pid, 'SIGINT');
    // npm itself ends by the SIGINT, as in a terminal; what counts is that it took everything with it
    expect([
      { code: 0, signal: null },
      { code: null, signal: 'SIGINT' },
    ]).toContainEqual(await exited);
    await eventually(
      () => {
        if (processGroupAlive(pid)) {
          const left = spawnSync('pgrep', ['-a', '-g', String(pid)], { encoding: 'utf8' }).stdout.trim();
          throw new Error(`processes of npm start's group ${pid} still run:\n${left}\nnpm start said last:\n${startErrors.slice(-1500)}`);
        }
      },
      // every app drains before it exits (sandbox-apiserver keeps serving its shutdown delay), slower on a loaded machine
      { timeoutMs: 180_000, intervalMs: 200 },
    );
  }, 420_000);
});
