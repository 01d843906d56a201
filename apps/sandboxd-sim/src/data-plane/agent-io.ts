import type { Socket } from 'node:net';
import type { AgentErrorKind, LineReader, WireAgentReply } from '@sandbox-scale/sandboxd-client';
import type { SandboxAccess } from './access';
import { isGuestPathError } from './guest-path';

/** One agent connection's view: where replies go and where further frames (fs_write's data) come from. */
export interface AgentIo {
  access: SandboxAccess;
  socket: Socket;
  reader: LineReader;
  send(frame: WireAgentReply): Promise<void>;
}

/** A refusal answered with an `error` frame; the connection goes on. */
export class AgentFail extends Error {
  override readonly name = 'AgentFail';
  constructor(
    readonly kind: AgentErrorKind,
    message: string,
  ) {
    super(message);
  }
}

export function isAgentFail(err: unknown): err is AgentFail {
  return err instanceof Error && err.name === 'AgentFail';
}

/** The caller's mistakes, as the file system reports them. */
const CALLER_ERRNOS = new Set([
  'EEXIST',
  'ENOTEMPTY',
  'EISDIR',
  'ENOTDIR',
  'EINVAL',
  'ELOOP',
  'EACCES',
  'EPERM',
  'EXDEV',
  'ENAMETOOLONG',
  'EBUSY',
]);

/** An error of a file operation as the agent answers it: not_found, bad_request, or internal. */
export function agentFailOf(err: unknown, path: string): AgentFail {
  if (isAgentFail(err)) return err;
  if (isGuestPathError(err)) return new AgentFail(err.problem === 'not_found' ? 'not_found' : 'bad_request', err.message);
  const code = (err as { code?: unknown }).code;
  if (code === 'ENOENT') return new AgentFail('not_found', `no such file or directory: ${JSON.stringify(path)}`);
  if (typeof code === 'string' && CALLER_ERRNOS.has(code)) return new AgentFail('bad_request', `${code}: ${JSON.stringify(path)}`);
  return new AgentFail('internal', `${typeof code === 'string' ? code : 'error'} on ${JSON.stringify(path)}`);
}
