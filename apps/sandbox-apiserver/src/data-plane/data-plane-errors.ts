import { isArchiveError, SANDBOX_GROUP, StatusError, statusErrorOf } from '@sandbox-scale/scale-core';
import {
  asAgentError,
  asSandboxdHttpError,
  isAgentProtocolError,
  isReplyTooLarge,
  isTransportError,
  type AgentErrorKind,
} from '@sandbox-scale/sandboxd-client';
import { SANDBOX_RESOURCE } from '../storage/sandbox-storage';
import { AGENT_CALL_TIMEOUT_MS, isCallTimeout } from './agent-signals';

/** Which sandbox a data-plane call was for, and what it did, as every error of it names them. */
export interface DataPlaneCall {
  readonly namespace: string;
  readonly name: string;
  /** `exec`, `read /work/x`, `port 8080`, …: what was asked, for the message. */
  readonly what: string;
  /** The node the sandbox lives on, once it is known. */
  readonly node?: string;
  /** The exec's timeoutSeconds, for the 504's message. */
  readonly timeoutSeconds?: number;
}

const details = (c: DataPlaneCall): { name: string; group: string; kind: string } => ({
  name: c.name,
  group: SANDBOX_GROUP,
  kind: SANDBOX_RESOURCE.resource,
});

const sandboxOf = (c: DataPlaneCall): string => `sandbox ${c.namespace}/${c.name}`;

/** The Status of a node's answer to a data-plane call (exec, the port and agent relays). */
function fromNodeStatus(c: DataPlaneCall, code: number, nodeMessage: string, retryAfterSeconds: number | undefined): StatusError {
  const cause = nodeMessage === '' ? `the node answered ${code}` : nodeMessage;
  const head = `${c.what} in ${sandboxOf(c)}`;
  switch (code) {
    case 400:
      return new StatusError('BadRequest', `${head}: ${cause}`, details(c));
    case 404:
      return new StatusError('NotFound', `${head}: the sandbox is gone from its node (${cause})`, details(c));
    case 409:
      return new StatusError('Conflict', `${head}: the sandbox has failed (${cause})`, details(c));
    case 413:
      return new StatusError('RequestEntityTooLarge', `${head}: ${cause}`, details(c));
    case 502:
      // the guest does not answer (still waking, nothing listening on a port): worth a retry
      return new StatusError('ServiceUnavailable', `cannot reach ${sandboxOf(c)} on node ${c.node ?? '?'}: ${cause}`, {
        ...details(c),
        retryAfterSeconds: 1,
      });
    case 503:
      return new StatusError('ServiceUnavailable', `${head}: node ${c.node ?? '?'} is busy (${cause})`, {
        ...details(c),
        retryAfterSeconds: retryAfterSeconds ?? 1,
      });
    case 504: {
      const limit = c.timeoutSeconds ? ` timeoutSeconds=${c.timeoutSeconds}` : ' its time limit';
      return new StatusError('Timeout', `${head}: the command outlived${limit} and was killed (${cause})`, details(c));
    }
    default:
      // 401, 426 and the rest are this server's own fault (a token or an upgrade it sent): the log says which
      return new StatusError('InternalError', `${head}: node ${c.node ?? '?'} answered ${code}: ${cause}`);
  }
}

const AGENT_REASONS: Record<AgentErrorKind, 'BadRequest' | 'NotFound' | 'InternalError'> = {
  bad_request: 'BadRequest',
  not_found: 'NotFound',
  unimplemented: 'BadRequest',
  internal: 'InternalError',
};

/**
 * The Kubernetes Status of any failure of a data-plane call, naming the sandbox and the cause: the
 * node's status codes and the agent's error kinds keep their meaning (400, 404, 409, 413, 504…);
 * a node that cannot be reached is a 503 to retry; a tar stream the caller sent that is corrupt,
 * cut short or names a path outside its target is a 400. A StatusError passes through as it is.
 */
export function dataPlaneStatusError(err: unknown, c: DataPlaneCall): StatusError {
  const known = statusErrorOf(err);
  if (known !== undefined) return known;
  // the only archive this server reads is a request body, so a bad one is the caller's
  if (err instanceof Error && isArchiveError(err))
    return new StatusError('BadRequest', `${c.what} in ${sandboxOf(c)}: ${err.message}`, details(c), { cause: err });
  if (isCallTimeout(err))
    return new StatusError(
      'Timeout',
      `${c.what} in ${sandboxOf(c)}: the guest agent did not answer within ${AGENT_CALL_TIMEOUT_MS / 1000} s`,
      details(c),
      { cause: err },
    );
  // a guest's answer past what this server holds (a directory of too many entries)
  if (isReplyTooLarge(err))
    return new StatusError('RequestEntityTooLarge', `${c.what} in ${sandboxOf(c)}: ${(err as Error).message}`, details(c), { cause: err });
  const agent = asAgentError(err);
  if (agent !== undefined) {
    const cause = agent.kind === 'unimplemented' ? `not supported by the sandbox's agent (${agent.message})` : agent.message;
    return new StatusError(AGENT_REASONS[agent.kind], `${c.what} in ${sandboxOf(c)}: ${cause}`, details(c), { cause: err });
  }
  const http = asSandboxdHttpError(err);
  if (http !== undefined) return withCause(fromNodeStatus(c, http.statusCode, http.message, http.retryAfterSeconds), err);
  if (isTransportError(err))
    return new StatusError(
      'ServiceUnavailable',
      `cannot reach node ${c.node ?? '?'} of ${sandboxOf(c)}`,
      { ...details(c), retryAfterSeconds: 1 },
      { cause: err },
    );
  if (isAgentProtocolError(err))
    return new StatusError('InternalError', `${c.what} in ${sandboxOf(c)}: the agent connection failed`, {}, { cause: err });
  return new StatusError('InternalError', `${c.what} in ${sandboxOf(c)} failed`, {}, { cause: err });
}

function withCause(s: StatusError, cause: unknown): StatusError {
  return new StatusError(s.reason, s.message, s.details, { cause });
}

/** A node's 404 on a sandbox-scoped call: the sandbox is gone, or the token held is not its own any more. */
export function isGoneFromNode(err: unknown): boolean {
  return asSandboxdHttpError(err)?.statusCode === 404;
}
