import { SANDBOX_API_VERSION, SANDBOX_GROUP } from '@sandbox-scale/scale-core';
import { z } from 'zod';
import { InvalidArgumentError, type RequestTarget } from './errors';
import { call, sandboxesPath } from './kube-api';
import { callOnSandbox, type SandboxScope } from './sandbox-retry';

export interface ExecOptions {
  /** Working directory in the sandbox (a guest path); default: the sandbox's own. */
  cwd?: string;
  /** Added to the command's environment, which the node otherwise clears to PATH, TERM and proxy variables. */
  env?: Record<string, string>;
  /** The command's time limit; the node kills it when it passes and the call fails with a DeadlineExceededError. Default: none. */
  timeoutMs?: number;
  /** Cancels the call; the node kills the command when the connection goes. */
  signal?: AbortSignal;
}

export const ExecResultSchema = z.looseObject({
  exitCode: z.number().int(),
  stdout: z.string().default(''),
  stderr: z.string().default(''),
});
export type ExecResult = Pick<z.infer<typeof ExecResultSchema>, 'exitCode' | 'stdout' | 'stderr'>;

/**
 * How long past the command's own limit the SDK waits for the answer: the node answers 504
 * when the limit passes, so this only ends a call whose answer was lost on the way.
 */
const ANSWER_GRACE_MS = 30_000;

/** The SandboxExecOptions body for `argv`, refusing what the server would refuse anyway before sending it. */
export function execBody(argv: readonly string[], o: ExecOptions = {}): Record<string, unknown> {
  if (!Array.isArray(argv) || argv.length === 0 || argv.some((a) => typeof a !== 'string'))
    throw new InvalidArgumentError('exec needs a command: argv must be a non-empty array of strings');
  if (o.timeoutMs !== undefined && !(Number.isFinite(o.timeoutMs) && o.timeoutMs >= 0))
    throw new InvalidArgumentError(`exec timeoutMs must be a number of milliseconds >= 0, got ${String(o.timeoutMs)}`);
  const timeoutSeconds = o.timeoutMs ? Math.ceil(o.timeoutMs / 1000) : undefined;
  return {
    apiVersion: SANDBOX_API_VERSION,
    kind: 'SandboxExecOptions',
    argv: [...argv],
    ...(o.cwd !== undefined ? { cwd: o.cwd } : {}),
    ...(o.env !== undefined ? { env: { ...o.env } } : {}),
    ...(timeoutSeconds !== undefined ? { timeoutSeconds } : {}),
  };
}

export function execTarget(s: Pick<SandboxScope, 'namespace' | 'name'>): RequestTarget {
  return { verb: 'create', resource: 'sandboxes/exec', group: SANDBOX_GROUP, namespace: s.namespace, name: s.name };
}

/** Runs argv to completion in the sandbox (POST sandboxes/{name}/exec) and returns its exit code and output. */
export async function execIn(s: SandboxScope, argv: readonly string[], o: ExecOptions = {}): Promise<ExecResult> {
  const body = execBody(argv, o);
  const limitMs = o.timeoutMs ? Math.ceil(o.timeoutMs / 1000) * 1000 + ANSWER_GRACE_MS : undefined;
  const raw = await callOnSandbox(
    s,
    'exec in',
    // never repeated on a 503 or 429: the command may have started before the node refused it
    { idempotent: false },
    { ...(o.signal ? { signal: o.signal } : {}), ...(limitMs !== undefined ? { timeoutMs: limitMs } : {}) },
    (signal) => call(s.kc, { method: 'POST', path: `${sandboxesPath(s.namespace, s.name)}/exec`, body, signal }, execTarget(s)),
  );
  const { exitCode, stdout, stderr } = ExecResultSchema.parse(raw);
  return { exitCode, stdout, stderr };
}
