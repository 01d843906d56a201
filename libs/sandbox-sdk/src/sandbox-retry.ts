import type { KubeConfig } from '@kubernetes/client-node';
import { retry } from '@sandbox-scale/scale-core';
import { deadlineOf, wait, type CallOptions, type Deadline } from './deadline';
import { AbortedError, isNotFound } from './errors';
import { isRetryableBeforeClaim } from './fast-path';
import { call, sandboxesPath, sandboxTarget } from './kube-api';

/** What a call on one sandbox needs to know about it. */
export interface SandboxScope {
  readonly kc: KubeConfig;
  readonly namespace: string;
  readonly name: string;
  /** True while a 404 means "not listed yet" rather than "gone" (a sandbox claimed moments ago). */
  settling(): boolean;
}

export interface RetryPolicy {
  /**
   * Repeating the call changes nothing (a read, a pause): it is also retried on answers given
   * before the server acted (429, 503 with Retry-After).
   */
  idempotent: boolean;
  /** False for a call that cannot be sent twice (its body is a stream read once). Default true. */
  repeatable?: boolean;
  /**
   * The call names a path in the sandbox, so its 404 may be "no such file" rather than "no such
   * sandbox": while the sandbox is new, a 404 is retried only when the sandbox itself is not
   * listed yet.
   */
  pathScoped?: boolean;
}

/** Whether sandbox-apiserver lists the sandbox now. */
async function isListed(s: SandboxScope, signal: AbortSignal | undefined): Promise<boolean> {
  try {
    await call(s.kc, { method: 'GET', path: sandboxesPath(s.namespace, s.name), signal }, sandboxTarget('get', s.namespace, s.name));
    return true;
  } catch {
    // not listed, or not known: the 404 may still be the sandbox's, so it is retried
    return false;
  }
}

/**
 * Runs `once` under the caller's deadline, again on a 404 while the sandbox is new (a 404 is
 * answered before anything is done, so it is safe to repeat), and, for idempotent calls, on
 * answers given before the server acted. A call the deadline or the caller ended is an
 * AbortedError naming what was cancelled.
 */
export async function callOnSandbox<T>(
  s: SandboxScope,
  what: string,
  policy: RetryPolicy,
  o: CallOptions,
  once: (signal: AbortSignal | undefined, d: Deadline) => Promise<T>,
): Promise<T> {
  const d = deadlineOf(o);
  // set once a 404 came while the sandbox was listed: it is the path that is missing, for good
  let pathMissing = false;
  const attempt = async (signal: AbortSignal | undefined): Promise<T> => {
    try {
      return await once(signal, d);
    } catch (err) {
      if (policy.pathScoped && isNotFound(err) && s.settling() && (await isListed(s, signal))) pathMissing = true;
      throw err;
    }
  };
  const shouldRetry = (err: unknown): boolean =>
    policy.repeatable !== false &&
    ((isNotFound(err) && s.settling() && !pathMissing) || (policy.idempotent && isRetryableBeforeClaim(err)));
  try {
    return await retry((_a, signal) => attempt(signal), {
      attempts: 60,
      baseMs: 100,
      maxMs: 1_000,
      jitter: 0.5,
      signal: d.signal,
      shouldRetry,
      sleep: wait,
    });
  } catch (err) {
    throw endedBy(err, d, `${what} ${s.namespace}/${s.name}`);
  }
}

/** `err`, or an AbortedError when the deadline or the caller is what ended the call. */
export function endedBy(err: unknown, d: Deadline, what: string): unknown {
  if (d.signal?.aborted && !(err instanceof AbortedError))
    return new AbortedError(`${what}: ${d.timedOut() ? 'timed out' : 'cancelled'}`, { cause: err });
  return err;
}
