import { stat } from 'node:fs/promises';
import { issuesText } from '@sandbox-scale/scale-core';
import { EXEC_OUTPUT_LIMIT_BYTES, ExecBodySchema, type ExecBody, type WireExecReply } from '@sandbox-scale/sandboxd-client';
import type { z } from 'zod';
import { ApiError, badBody, parseBodyJson } from '../api-error';
import { errorReply, jsonReply, type Reply } from '../http-io';
import type { Route, RouteCtx } from '../route';
import { accessSandbox, dataPlaneOf } from './access';
import { badEnvName, collectOutput, isSpawnError, spawnGuest, type BufferedOutcome } from './exec-runner';
import { isGuestPathError, resolveFollow } from './guest-path';

type ExecInput = z.output<typeof ExecBodySchema>;

/** The body, with the cause of a refusal named (an unknown field, an empty argv, a negative timeout). */
export function decodeExecBody(raw: Buffer): ExecInput {
  const text = raw.toString('utf8');
  if (text.trim() === '') throw badBody();
  const parsed = ExecBodySchema.safeParse(parseBodyJson(text));
  if (!parsed.success) {
    const unknown = parsed.error.issues.flatMap((i) => (i.code === 'unrecognized_keys' ? i.keys : []));
    throw badBody(unknown.length > 0 ? `unknown field ${JSON.stringify(unknown[0])}` : issuesText(parsed.error, '; '));
  }
  const bad = badEnvName(parsed.data.env);
  if (bad !== undefined) throw badBody(`env: invalid variable ${JSON.stringify(bad)}`);
  return parsed.data;
}

/** The working directory as a host path: a guest path that must exist inside the root and be a directory. */
export async function hostCwd(root: string, cwd: string | null | undefined): Promise<string> {
  if (cwd === undefined || cwd === null || cwd === '') return root;
  try {
    const dir = await resolveFollow(root, cwd);
    if (!(await stat(dir)).isDirectory()) throw new ApiError(400, `cwd is not a directory: ${cwd}`);
    return dir;
  } catch (err) {
    if (isGuestPathError(err))
      throw new ApiError(400, err.problem === 'not_found' ? `cwd does not exist: ${cwd}` : `invalid cwd: ${err.message}`);
    throw err;
  }
}

function outcomeReply(o: BufferedOutcome, body: ExecBody): Reply {
  if (o.end === 'timeout') return errorReply(504, `command timed out after ${body.timeout_seconds ?? 0}s`);
  if (o.end === 'cap') return errorReply(413, `command output exceeds ${EXEC_OUTPUT_LIMIT_BYTES} bytes`);
  if (o.end === 'memory') return errorReply(503, 'node exec memory exhausted', { 'retry-after': '1' });
  const reply: WireExecReply = { exit_code: o.exitCode, stdout: o.stdout.toString('utf8'), stderr: o.stderr.toString('utf8') };
  return jsonReply(reply);
}

async function runExec(c: RouteCtx): Promise<Reply> {
  dataPlaneOf(c.node);
  const { sb, dp, root, owner } = await accessSandbox(c.node, c.bearer, c.id);
  const body = decodeExecBody(c.rawBody);
  const cwd = await hostCwd(root, body.cwd);
  const release = dp.hold(sb.id);
  try {
    const child = await spawnGuest(dp.groups, { sandboxId: sb.id, argv: body.argv, cwd, env: body.env, output: 'pipe', owner }).catch(
      (err: unknown) => {
        throw isSpawnError(err) ? new ApiError(400, err.message) : err;
      },
    );
    const outcome = await collectOutput(child, {
      timeoutMs: (body.timeout_seconds ?? 0) * 1000,
      capBytes: EXEC_OUTPUT_LIMIT_BYTES,
      memory: dp.memory,
      signal: c.signal,
    });
    // a sandbox released while its command ran took the command with it
    if (c.node.findSandbox(sb.id) !== sb) return errorReply(404, 'unknown sandbox');
    sb.idleSince = c.node.now();
    return outcomeReply(outcome, body);
  } finally {
    release();
  }
}

export const execRoutes: Route[] = [{ method: 'POST', path: '/v1/sandboxes/:id/exec', verb: 'exec', handle: runExec }];
