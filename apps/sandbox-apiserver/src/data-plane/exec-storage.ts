import { BadRequestError, issuesText, SANDBOX_API_VERSION } from '@sandbox-scale/scale-core';
import type { ExecRequest } from '@sandbox-scale/sandboxd-client';
import { z } from 'zod';
import type { DataPlaneAudit } from './data-plane-audit';
import { guestPath } from './guest-path';
import { reach, type SandboxResolver } from './reach';

/** The largest exec request body (the node's own cap on it). */
export const EXEC_BODY_MAX_BYTES = 1024 * 1024;

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
  ) {}

  async exec(namespace: string, name: string, body: unknown, caller: { user: string; signal?: AbortSignal }): Promise<SandboxExecResult> {
    let options: SandboxExecOptions;
    let req: ExecRequest;
    try {
      options = parseExecOptions(body);
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
      const r = await reach(
        this.resolver,
        call,
        (s) => s.client.exec(s.id, s.token, req, caller.signal !== undefined ? { signal: caller.signal } : {}),
        {
          ...(caller.signal !== undefined ? { signal: caller.signal } : {}),
          where: (s) => Object.assign(outcome, { node: s.node, sandboxId: s.id }),
        },
      );
      outcome.exitCode = r.exitCode;
      return { apiVersion: SANDBOX_API_VERSION, kind: 'SandboxExecResult', exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr };
    });
  }
}
