import type { BudgetLease } from '@sandbox-scale/kube-runtime';
import { BadRequestError, issuesText, SANDBOX_API_VERSION, SANDBOX_GROUP, StatusError, statusErrorOf } from '@sandbox-scale/scale-core';
import { EXEC_OUTPUT_LIMIT_BYTES, isReplyTooLarge, type ExecRequest, type ExecResult } from '@sandbox-scale/sandboxd-client';
import { z } from 'zod';
import type { DataPlaneAudit } from './data-plane-audit';
import { guestPath } from './guest-path';
import { reach, type SandboxResolver } from './reach';

/** The largest exec request body (the node's own cap on it). */
export const EXEC_BODY_MAX_BYTES = 1024 * 1024;

/** The longest an exec runs by default; one without timeoutSeconds gets it. */
export const DEFAULT_MAX_EXEC_TIMEOUT_SECONDS = 600;

/** The most stdout + stderr one exec answers with by default: the node's own cap. */
export const DEFAULT_MAX_EXEC_OUTPUT_BYTES = EXEC_OUTPUT_LIMIT_BYTES;

/**
 * Bytes held per byte of a node's exec reply while it is read and decoded: the reply as read and
 * its text. Once decoded only the output is kept (at most two bytes per character), and the
 * answer is written from it in slices at the pace the caller reads.
 */
export const EXEC_REPLY_HOLD_FACTOR = 2;

/**
 * The largest node reply read for an output cap: JSON may spend six bytes on each output byte
 * (a control byte's `\u00XX`), plus the reply's own fields.
 */
export function execReplyLimitBytes(maxOutputBytes: number): number {
  return 6 * maxOutputBytes + 64 * 1024;
}

const noNul = (what: string) => z.string().refine((s) => !s.includes('\u0000'), `${what} must not hold NUL`);

/** `SandboxExecOptions`: strict, as the node is (an unknown field is a 400, never silently dropped). */
export const SandboxExecOptionsSchema = z.strictObject({
  apiVersion: z.literal(SANDBOX_API_VERSION).optional(),
  kind: z.literal('SandboxExecOptions').optional(),
  argv: z.array(noNul('an argument')).min(1, 'argv must name a command'),
  cwd: z.string().optional(),
  env: z
    .record(
      z
        .string()
        .refine((k) => k !== '' && !k.includes('=') && !k.includes('\u0000'), 'an env name must be non-empty and hold no "=" or NUL'),
      noNul('an env value'),
    )
    .optional(),
  timeoutSeconds: z.number().int().min(0).optional(),
});
export type SandboxExecOptions = z.infer<typeof SandboxExecOptionsSchema>;

export interface SandboxExecResult {
  readonly apiVersion: typeof SANDBOX_API_VERSION;
  readonly kind: 'SandboxExecResult';
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** The options of a request body, or a 400 naming what is wrong with it. */
export function parseExecOptions(body: unknown): SandboxExecOptions {
  if (body === undefined) throw new BadRequestError('exec needs a body: SandboxExecOptions with argv');
  const r = SandboxExecOptionsSchema.safeParse(body);
  if (!r.success) throw new BadRequestError(`the body is not a SandboxExecOptions: ${issuesText(r.error)}`);
  return r.data;
}

function execRequestOf(o: SandboxExecOptions): ExecRequest {
  return {
    argv: o.argv,
    ...(o.cwd !== undefined ? { cwd: guestPath(o.cwd, 'cwd') } : {}),
    ...(o.env !== undefined ? { env: o.env } : {}),
    ...(o.timeoutSeconds ? { timeoutSeconds: o.timeoutSeconds } : {}),
  };
}

/**
 * POST sandboxes/{name}/exec: the node's buffered exec (runs to completion, output returned
 * whole, a non-zero exit is a result). A caller that hangs up aborts the call, and the node kills
 * the command. The node wakes a paused sandbox for it.
 */
export class ExecStorage {
  constructor(
    private readonly resolver: SandboxResolver,
    private readonly audit: DataPlaneAudit,
    private readonly limits: { maxOutputBytes: number; maxTimeoutSeconds: number } = {
      maxOutputBytes: DEFAULT_MAX_EXEC_OUTPUT_BYTES,
      maxTimeoutSeconds: DEFAULT_MAX_EXEC_TIMEOUT_SECONDS,
    },
  ) {}

  /**
   * `caller.memory` holds the bytes of the node's reply as they are read, so a command printing
   * megabytes is refused with 429 once its namespace's (or the server's) share is full, before the
   * reply is held whole; the handler gives them back once the answer is written.
   */
  async exec(
    namespace: string,
    name: string,
    body: unknown,
    caller: { user: string; signal?: AbortSignal; memory?: BudgetLease },
  ): Promise<SandboxExecResult> {
    let options: SandboxExecOptions;
    let req: ExecRequest;
    try {
      options = parseExecOptions(body);
      // a command runs at most --max-exec-timeout: none asked (or 0) gets it, more is refused
      const max = this.limits.maxTimeoutSeconds;
      if ((options.timeoutSeconds ?? 0) > max)
        throw new BadRequestError(
          `timeoutSeconds: ${options.timeoutSeconds} is more than this server's maximum of ${max} s (--max-exec-timeout)`,
        );
      if (!options.timeoutSeconds) options = { ...options, timeoutSeconds: max };
      req = execRequestOf(options);
    } catch (err) {
      // a refused body is counted and audited too, with what is known of it
      return this.audit.observe('exec', { user: caller.user, namespace, name }, () => Promise.reject(err));
    }
    const fields = {
      user: caller.user,
      namespace,
      name,
      argv: options.argv,
      ...(options.env !== undefined ? { envKeys: Object.keys(options.env) } : {}),
      ...(req.cwd !== undefined ? { cwd: req.cwd } : {}),
      ...(options.timeoutSeconds ? { timeoutSeconds: options.timeoutSeconds } : {}),
    };
    return this.audit.observe('exec', fields, async (outcome) => {
      const call = { namespace, name, what: 'exec', ...(options.timeoutSeconds ? { timeoutSeconds: options.timeoutSeconds } : {}) };
      const memory = caller.memory;
      const opts = {
        ...(caller.signal !== undefined ? { signal: caller.signal } : {}),
        replyLimitBytes: execReplyLimitBytes(this.limits.maxOutputBytes),
        ...(memory !== undefined ? { holdReplyBytes: (bytes: number) => memory.take(bytes * EXEC_REPLY_HOLD_FACTOR) } : {}),
      };
      let r: ExecResult;
      try {
        r = await reach(this.resolver, call, (s) => s.client.exec(s.id, s.token, req, opts), {
          ...(caller.signal !== undefined ? { signal: caller.signal } : {}),
          where: (s) => Object.assign(outcome, { node: s.node, sandboxId: s.id }),
        });
      } catch (err) {
        // the node's own 413 (its 8 MiB cap) and a reply past this server's read cap say the same
        if (isReplyTooLarge(err) || statusErrorOf(err)?.code === 413) throw this.#tooLarge(namespace, name);
        throw err;
      }
      // the reply and its text are garbage now: the request holds only the output it answers with
      memory?.keep(2 * (r.stdout.length + r.stderr.length));
      // the node caps output at its own limit; a lower cap of this server is applied here
      if (Buffer.byteLength(r.stdout) + Buffer.byteLength(r.stderr) > this.limits.maxOutputBytes) throw this.#tooLarge(namespace, name);
      outcome.exitCode = r.exitCode;
      return { apiVersion: SANDBOX_API_VERSION, kind: 'SandboxExecResult', exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr };
    });
  }

  #tooLarge(namespace: string, name: string): StatusError {
    return new StatusError(
      'RequestEntityTooLarge',
      `exec in sandbox ${namespace}/${name}: the command's output (stdout and stderr together) is larger than the API's cap of ${this.limits.maxOutputBytes} bytes (--max-exec-output-bytes); write it to a file and read it through sandboxes/files`,
      { name, group: SANDBOX_GROUP, kind: 'sandboxes' },
    );
  }
}
