import type { Readable } from 'node:stream';
import type { AgentRequest } from '@sandbox-scale/sandboxd-client';
import { isApiError } from '../api-error';
import { AgentFail, type AgentIo } from './agent-io';
import { hostCwd } from './exec-route';
import { badEnvName, exited, isSpawnError, spawnGuest } from './exec-runner';
import { signalGroup } from './process-groups';

type ExecFrame = Extract<AgentRequest, { op: 'exec' }>;

/**
 * `exec`: `started{pid}`, the output as `stdout`/`stderr` frames while it runs, then `exit{code}`.
 * A detached command is answered `started` then `done` and runs on (until release kills it). The
 * connection closing kills a command that is not detached. `user` is accepted and ignored: every
 * command runs as the sandbox's own uid (with --guest-uids), else as the simulator's user.
 */
export async function agentExec(io: AgentIo, req: ExecFrame): Promise<void> {
  const { sb, dp, root, owner } = io.access;
  const bad = badEnvName(req.env);
  if (bad !== undefined) throw new AgentFail('bad_request', `env: invalid variable ${JSON.stringify(bad)}`);
  const cwd = await hostCwd(root, req.cwd).catch((err: unknown) => {
    throw isApiError(err) && err.status === 400 ? new AgentFail('bad_request', err.message) : err;
  });
  const output = req.detach ? 'ignore' : 'pipe';
  const child = await spawnGuest(dp.groups, { sandboxId: sb.id, argv: req.argv, cwd, env: req.env, output, owner }).catch(
    (err: unknown) => {
      throw isSpawnError(err) ? new AgentFail('bad_request', err.message) : err;
    },
  );
  const pid = child.pid ?? -1;
  await io.send({ type: 'started', pid });
  if (req.detach) {
    child.unref();
    return io.send({ type: 'done' });
  }
  const onClose = (): void => void signalGroup(pid, 'SIGKILL');
  io.socket.once('close', onClose);
  const release = dp.hold(sb.id);
  try {
    const streams = [stream(io, child.stdout, 'stdout'), stream(io, child.stderr, 'stderr')];
    const code = await exited(child);
    await Promise.all(streams);
    await io.send({ type: 'exit', code });
  } finally {
    io.socket.off('close', onClose);
    release();
  }
}

/** Forwards one output pipe as frames, pausing it while the connection's buffer is full. */
async function stream(io: AgentIo, pipe: Readable | null, type: 'stdout' | 'stderr'): Promise<void> {
  if (pipe === null) return;
  try {
    for await (const chunk of pipe) await io.send({ type, data: (chunk as Buffer).toString('base64') });
  } catch {
    // the pipe was destroyed after the grace period, or the connection closed: nothing more to send
  }
}
