import { ANNOTATIONS, BadRequestError, type Sandbox } from '@sandbox-scale/scale-core';

const INT = /^[+-]?[0-9]+$/;
const INT64_MAX = 9223372036854775807n;

/**
 * The claim TTL in seconds for a submitted Sandbox: shutdownTime wins
 * (rounded up, must be in the future), else the ttl-seconds annotation (a non-negative base-10
 * integer), else 0 = the node's default. Errors are 400s raised before any VM is spent.
 */
export function deriveTtlSeconds(s: Pick<Sandbox, 'metadata' | 'spec'>, now: Date): number {
  const shutdown = s.spec.shutdownTime;
  if (shutdown !== undefined && shutdown !== '') {
    const leftMs = new Date(shutdown).getTime() - now.getTime();
    if (!(leftMs > 0)) throw new BadRequestError(`spec.shutdownTime ${shutdown} is not in the future`);
    return Math.ceil(leftMs / 1000);
  }
  const raw = s.metadata.annotations?.[ANNOTATIONS.ttlSeconds];
  if (raw === undefined || raw === '') return 0;
  if (!INT.test(raw) || BigInt(raw) > INT64_MAX || BigInt(raw) < 0n) {
    throw new BadRequestError(`annotation ${ANNOTATIONS.ttlSeconds}=${JSON.stringify(raw)}: want a non-negative integer of seconds`);
  }
  return Number(BigInt(raw));
}
