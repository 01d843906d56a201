import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import type { Registry } from 'prom-client';
import { z } from 'zod';
import { ConfigError } from '../config/flags';
import { durationFlag } from '../config/manager-flags';
import { settle } from '../testing/fake-clock';
import { setupSignalHandler } from '../signals';
import { runApp, type AppDefinition, type RunningApp } from './run-app';

const schema = z.object({
  replicas: z.coerce.number().int().min(1).default(1).describe('Copies to run'),
  resync: durationFlag('30s').describe('Resync period'),
  tokenFile: z.string().default('').describe('File holding a token'),
  caFile: z.string().default('').describe('CA bundle'),
});
type Config = z.infer<typeof schema>;

/** Text written to a fake stdout or stderr. */
function output(): { write(text: string): boolean; text: () => string } {
  let text = '';
  return { write: (t: string) => ((text += t), true), text: () => text };
}

/** The JSON log lines the app wrote. */
function logLines(): { destination: Writable; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString().split('\n')) if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  return { destination, lines };
}

function deferred(): { promise: Promise<void>; resolve: () => void; reject: (err: Error) => void } {
  let resolve!: () => void;
  let reject!: (err: Error) => void;
  const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

/** A fake app that records what runApp asks of it; its stop drains until `drained` resolves. */
function fakeApp(over: Partial<RunningApp> = {}) {
  const calls: string[] = [];
  const drained = deferred();
  const logs = logLines();
  const seen: { config?: Config; registry?: Registry; inputs?: { token: string } } = {};
  const app: AppDefinition<typeof schema.shape, { token: string }> = {
    name: 'fake',
    summary: 'A fake app',
    schema,
    inputs: { token: { flag: '--token-file', read: (c) => (c.tokenFile === '' ? 'none' : `read ${c.tokenFile}`) } },
    logger: () => ({ destination: logs.destination }),
    start: ({ config, registry, inputs }) => {
      calls.push('start');
      Object.assign(seen, { config, registry, inputs });
      return {
        stop: async () => {
          calls.push('stop');
          await drained.promise;
          calls.push('drained');
        },
        ...over,
      };
    },
  };
  return { app, calls, drained, logs, seen };
}

describe('runApp', () => {
  it('prints --help on stdout and exits 0 without starting', async () => {
    const { app, calls } = fakeApp();
    const stdout = output();
    expect(await runApp(app, { freezeIntrinsics: false, argv: ['--replicas=0', '--help'], env: {}, stdout, stderr: output() })).toBe(0);
    expect(stdout.text()).toContain('Usage: fake [flags]');
    expect(stdout.text()).toContain('--resync <value>');
    expect(calls).toEqual([]);
  });

  it('reports every bad flag at once on stderr and exits 2 without starting', async () => {
    const { app, calls } = fakeApp();
    const stderr = output();
    const code = await runApp(app, {
      freezeIntrinsics: false,
      argv: ['--nope', 'x', '--replicas=0', '--resync=soon', 'stray'],
      env: {},
      stdout: output(),
      stderr,
    });
    expect(code).toBe(2);
    expect(stderr.text()).toBe(
      'fake: unknown flag --nope (see --help); unexpected argument "stray": flags look like --name=value; ' +
        'invalid configuration: --replicas: Too small: expected number to be >=1; --resync: "soon" is not a duration like 500ms, 15s, 1m30s\n',
    );
    expect(calls).toEqual([]);
  });

  it('reports every input that cannot be read at once, each under its flag, and exits 2', async () => {
    const stderr = output();
    const started: string[] = [];
    const code = await runApp(
      {
        name: 'fake',
        summary: 's',
        schema,
        inputs: {
          token: {
            flag: '--token-file',
            read: (c) => {
              throw new Error(`cannot read ${c.tokenFile}`);
            },
          },
          ca: {
            flag: '--ca-file',
            read: () => {
              throw new ConfigError('--ca-file: not PEM', '--ca-file');
            },
          },
          replicas: { flag: '--replicas', read: (c) => c.replicas },
        },
        start: () => {
          started.push('start');
          return { stop: async () => undefined };
        },
      },
      { argv: ['--token-file=/nope', '--ca-file=/x'], env: {}, stdout: output(), stderr },
    );
    expect(code).toBe(2);
    expect(stderr.text()).toBe('fake: invalid configuration: --token-file: cannot read /nope; --ca-file: not PEM\n');
    expect(started).toEqual([]);
  });

  it('starts with the parsed flags, the inputs and process metrics; a signal stops it, drains, then exits 0', async () => {
    const { app, calls, drained, logs, seen } = fakeApp();
    const proc = new EventEmitter();
    const signal = setupSignalHandler(proc as unknown as NodeJS.Process);
    let code: number | undefined;
    const run = runApp(app, {
      freezeIntrinsics: false,
      argv: ['--replicas', '3', '--token-file=/t'],
      env: { SANDBOX_SCALE_RESYNC: '1m' },
      signal,
    }).then((c) => (code = c));
    await settle();
    expect(calls).toEqual(['start']);
    expect(seen.config).toEqual({ replicas: 3, resync: 60_000, tokenFile: '/t', caFile: '' });
    expect(seen.inputs).toEqual({ token: 'read /t' });
    expect((await seen.registry?.getMetricsAsJSON())?.map((m) => m.name)).toEqual(
      expect.arrayContaining(['process_cpu_user_seconds_total', 'nodejs_eventloop_lag_seconds']),
    );

    proc.emit('SIGTERM', 'SIGTERM');
    await settle();
    // stopping, not stopped: the exit code waits for the drain
    expect(calls).toEqual(['start', 'stop']);
    expect(code).toBeUndefined();
    drained.resolve();
    expect(await run).toBe(0);
    expect(calls).toEqual(['start', 'stop', 'drained']);
    expect(logs.lines.map((l) => l.msg)).toEqual(['stopping', 'stopped']);
    expect(logs.lines[0]?.reason).toBe('received SIGTERM');
  });

  it('exits 1 when the app fails while running, without a stop', async () => {
    const failed = deferred();
    const { app, calls, logs } = fakeApp({ done: failed.promise });
    const run = runApp(app, { freezeIntrinsics: false, argv: [], env: {}, signal: new AbortController().signal });
    await settle();
    failed.reject(new Error('lost the leader Lease'));
    expect(await run).toBe(1);
    expect(calls).toEqual(['start']);
    expect(logs.lines.map((l) => [l.msg, (l.err as { message?: string } | undefined)?.message])).toEqual([
      ['fake stopped', 'lost the leader Lease'],
    ]);
  });

  it('exits 0 when the app ends by itself', async () => {
    const { app, calls } = fakeApp({ done: Promise.resolve() });
    expect(await runApp(app, { freezeIntrinsics: false, argv: [], env: {}, signal: new AbortController().signal })).toBe(0);
    expect(calls).toEqual(['start']);
  });

  it('exits 1 when the drain fails', async () => {
    const ac = new AbortController();
    const { app, logs } = fakeApp({ stop: () => Promise.reject(new Error('shutdown timed out')) });
    const run = runApp(app, { freezeIntrinsics: false, argv: [], env: {}, signal: ac.signal });
    await settle();
    ac.abort(new Error('received SIGINT'));
    expect(await run).toBe(1);
    expect(logs.lines.map((l) => l.msg)).toEqual(['stopping', 'stop failed']);
  });

  it('exits 1 when a stop hangs past its deadline, so a stopped process always ends', async () => {
    const ac = new AbortController();
    const { app, calls, logs } = fakeApp();
    const run = runApp(app, { freezeIntrinsics: false, argv: [], env: {}, signal: ac.signal, stopDeadlineMs: 50 });
    await settle();
    ac.abort(new Error('received SIGINT'));
    // the drain never resolves (nothing resolves `drained`)
    expect(await run).toBe(1);
    expect(calls).toEqual(['start', 'stop']);
    expect(logs.lines.map((l) => l.msg)).toEqual(['stopping', 'stop did not finish in time: exiting without it']);
  });

  it('exits 1 when the app fails to start, and stops at once when the signal came while it started', async () => {
    const logs = logLines();
    const failing = await runApp(
      {
        name: 'fake',
        summary: 's',
        schema,
        logger: () => ({ destination: logs.destination }),
        start: () => Promise.reject(new Error('port in use')),
      },
      { argv: [], env: {}, signal: new AbortController().signal },
    );
    expect(failing).toBe(1);
    expect(logs.lines.map((l) => l.msg)).toEqual(['failed to start']);

    const ac = new AbortController();
    const { app, calls, drained } = fakeApp();
    ac.abort(new Error('received SIGTERM'));
    drained.resolve();
    expect(await runApp(app, { freezeIntrinsics: false, argv: [], env: {}, signal: ac.signal })).toBe(0);
    expect(calls).toEqual(['start', 'stop', 'drained']);
  });
});
