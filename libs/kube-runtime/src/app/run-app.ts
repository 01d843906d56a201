import { collectDefaultMetrics, Registry } from 'prom-client';
import { registerBuildInfo } from '../metrics/build-info';
import type { z } from 'zod';
import { isConfigError, isHelp, parseFlags } from '../config/flags';
import { createLogger, type Logger, type LoggerOptions } from '../log/logger';
import { setupSignalHandler } from '../signals';
import { readInputs, type FlagInput } from './flag-input';
import { freezeIntrinsics } from './freeze-intrinsics';

type Shape = Record<string, z.ZodType>;

/** The validated flags of an app: `z.infer` of its config schema. */
export type AppConfig<S extends Shape> = z.infer<z.ZodObject<S>>;

export interface AppContext<C, I> {
  config: C;
  /** The values of `inputs`, each read once. */
  inputs: I;
  log: Logger;
  /** Holds the process metrics (CPU, memory, event loop lag, GC) already; the app adds its own. */
  registry: Registry;
}

/** The app once started: its manager, servers and clients. */
export interface RunningApp {
  /** Settles when the app ends by itself (resolves on a clean end, rejects with why it failed); absent when it runs until stopped. */
  readonly done?: Promise<void>;
  /** Graceful stop: take no new work, drain what is in flight, close. */
  stop(): Promise<void>;
}

export interface AppDefinition<S extends Shape, I> {
  /** Program name: the help's usage line, the prefix of flag errors, the logger's name. */
  name: string;
  summary: string;
  schema: z.ZodObject<S>;
  inputs?: { [K in keyof I]: FlagInput<AppConfig<S>, I[K]> };
  /** Logger options from the flags (a level flag, stderr when stdout carries output); default JSON lines on stdout. */
  logger?: (config: AppConfig<S>) => Omit<LoggerOptions, 'name'>;
  /** Builds and starts the app (its manager serves the metrics and probes); resolves once it runs. */
  start(ctx: AppContext<AppConfig<S>, I>): Promise<RunningApp> | RunningApp;
}

/** Where an app's process meets the world; tests pass their own. */
export interface AppIo {
  argv?: readonly string[];
  env?: Record<string, string | undefined>;
  stdout?: { write(text: string): unknown };
  stderr?: { write(text: string): unknown };
  /** Aborts to stop the app; default the first SIGTERM or SIGINT. */
  signal?: AbortSignal;
  /**
   * Freeze the built-in prototypes before the app starts (freeze-intrinsics.ts); default true.
   * Only tests that run several apps in one shared process turn it off.
   */
  freezeIntrinsics?: boolean;
  /**
   * How long a stop may take in all before the app gives up on it and exits 1 anyway; default the
   * app's --graceful-shutdown-timeout (30 s without one) plus 15 s. The manager bounds its own
   * drain; this bounds everything else a stop waits on (a server's last connections, a final write
   * to an API server that is gone), so a stopped process always ends.
   */
  stopDeadlineMs?: number;
}

/** The stop deadline of an app's flags: its graceful shutdown timeout plus a margin for the rest of the stop. */
function stopDeadlineOf(config: object): number {
  const grace =
    'gracefulShutdownTimeout' in config && typeof config.gracefulShutdownTimeout === 'number' ? config.gracefulShutdownTimeout : 30_000;
  return grace + 15_000;
}

/** 0: stopped cleanly or printed --help; 1: failed to start, failed while running or while stopping; 2: bad configuration. */
export type ExitCode = 0 | 1 | 2;

export const EXIT_CODES = { ok: 0, failed: 1, badConfig: 2 } as const satisfies Record<string, ExitCode>;

type Outcome = { kind: 'signal' } | { kind: 'ended' } | { kind: 'failed'; err: unknown };

/** The flags, then the inputs they name; an exit code when the app must not start (--help, bad configuration). */
function configure<S extends Shape, I>(app: AppDefinition<S, I>, io: AppIo): { config: AppConfig<S>; inputs: I } | ExitCode {
  const stdout = io.stdout ?? process.stdout;
  const stderr = io.stderr ?? process.stderr;
  let config: AppConfig<S>;
  try {
    const parsed = parseFlags(app.schema, { program: app.name, summary: app.summary, argv: io.argv, env: io.env });
    if (isHelp(parsed)) {
      stdout.write(`${parsed.help}\n`);
      return EXIT_CODES.ok;
    }
    config = parsed;
  } catch (err) {
    stderr.write(`${app.name}: ${err instanceof Error ? err.message : String(err)}\n`);
    return isConfigError(err) ? EXIT_CODES.badConfig : EXIT_CODES.failed;
  }
  const { values: inputs, problems } = readInputs(app.inputs, config);
  if (problems.length > 0) {
    stderr.write(`${app.name}: invalid configuration: ${problems.join('; ')}\n`);
    return EXIT_CODES.badConfig;
  }
  return { config, inputs };
}

/** Waits for the stop signal or the app's own end; on the signal, drains the app. */
async function serve(name: string, running: RunningApp, signal: AbortSignal, log: Logger, stopDeadlineMs: number): Promise<ExitCode> {
  const stopRequested = new Promise<Outcome>((resolve) => {
    if (signal.aborted) resolve({ kind: 'signal' });
    else signal.addEventListener('abort', () => resolve({ kind: 'signal' }), { once: true });
  });
  const ended = running.done?.then(
    (): Outcome => ({ kind: 'ended' }),
    (err: unknown): Outcome => ({ kind: 'failed', err }),
  );
  const outcome = await Promise.race(ended ? [stopRequested, ended] : [stopRequested]);
  if (outcome.kind === 'ended') {
    log.info('stopped');
    return EXIT_CODES.ok;
  }
  if (outcome.kind === 'failed') {
    log.error({ err: outcome.err }, `${name} stopped`);
    return EXIT_CODES.failed;
  }
  const reason: unknown = signal.reason;
  log.info({ reason: reason instanceof Error ? reason.message : String(reason) }, 'stopping');
  const drain = async (): Promise<'stopped'> => {
    await running.stop();
    // a failure while draining (a shutdown timeout) is the run's outcome too
    await running.done;
    return 'stopped';
  };
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'deadline'>((resolve) => {
    timer = setTimeout(() => resolve('deadline'), stopDeadlineMs);
  });
  try {
    const outcome = await Promise.race([drain(), deadline]);
    if (outcome === 'deadline') {
      log.error({ stopDeadlineMs }, 'stop did not finish in time: exiting without it');
      return EXIT_CODES.failed;
    }
  } catch (err) {
    log.error({ err }, 'stop failed');
    return EXIT_CODES.failed;
  } finally {
    clearTimeout(timer);
  }
  log.info('stopped');
  return EXIT_CODES.ok;
}

/**
 * The one way an app starts and stops: flags (all problems at once, exit 2; --help, exit 0), the
 * inputs they name (all problems at once, exit 2), the built-in prototypes frozen, the logger, a metrics registry with the
 * process metrics, the app's start (its manager, probes and servers), then the first SIGTERM or
 * SIGINT drains it. Resolves with the exit code; the caller (main.ts) exits with it, so no
 * library ends the process.
 */
export async function runApp<S extends Shape, I = Record<string, never>>(app: AppDefinition<S, I>, io: AppIo = {}): Promise<ExitCode> {
  const configured = configure(app, io);
  if (typeof configured === 'number') return configured;
  const { config, inputs } = configured;
  // every module is loaded by now and no request has been read: from here on, no input can reach a prototype
  if (io.freezeIntrinsics !== false) freezeIntrinsics();
  const log = createLogger({ name: app.name, ...app.logger?.(config) });
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  registerBuildInfo(registry, app.name, io.env ?? process.env);
  // listening before start: a SIGTERM while starting stops the app once it runs
  const signal = io.signal ?? setupSignalHandler();
  let running: RunningApp;
  try {
    running = await app.start({ config, inputs, log, registry });
  } catch (err) {
    log.error({ err }, 'failed to start');
    return isConfigError(err) ? EXIT_CODES.badConfig : EXIT_CODES.failed;
  }
  return serve(app.name, running, signal, log, io.stopDeadlineMs ?? stopDeadlineOf(config));
}
