import type { KubeStatus } from '@sandbox-scale/scale-core';
import { isDataPlaneTarget } from '../data-plane/subresources';

/** How loudly a failed request is logged: only a server fault is an error, with its stack. */
export type RequestLogLevel = 'error' | 'info' | 'debug' | 'silent';

/**
 * The log level for a request answered with status. A 4xx is the client's mistake and a 503 that
 * carries Retry-After (no warm capacity, too busy) is an answer the client is told to retry: both are
 * expected traffic, and logging them as errors would bury real faults. A data-plane 503/504 is the
 * guest's answer (a command past its timeout, a port nothing listens on), logged and counted by the
 * data plane's own audit.
 */
export function requestLogLevel(status: KubeStatus, path: string | undefined): RequestLogLevel {
  const code = status.code;
  if (code === 500) return 'error';
  if (code > 500) {
    if (isDataPlaneTarget(path)) return 'silent';
    if (code === 503 && status.details?.retryAfterSeconds !== undefined) return 'info';
    return 'error';
  }
  return code >= 400 ? 'debug' : 'silent';
}
