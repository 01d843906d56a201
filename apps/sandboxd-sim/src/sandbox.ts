import type { SimKey } from './wire-key';

/** Claim states; small integers keep the record compact. */
export const RUNNING = 0;
export const HIBERNATED = 1;
export const ARCHIVED = 2;
export type VmState = typeof RUNNING | typeof HIBERNATED | typeof ARCHIVED;

/** A deadline of NO_DEADLINE means "never reaped" (an archive kept forever). */
export const NO_DEADLINE = -1;

export interface SandboxInit {
  id: string;
  token: string;
  key: SimKey;
  tenant: string | undefined;
  claimRef: string | undefined;
  fromCheckpoint: string | undefined;
  templateDigest: string | undefined;
  ttlS: number;
  now: number;
}

/**
 * One live claim. A million of these share a process, so: the key is a shared object, the
 * tenant a shared string, and times are integer milliseconds relative to the node's epoch
 * (small integers stay unboxed in V8, epoch milliseconds would not). No timers per sandbox:
 * the node's reaper sweeps the table.
 */
export class Sandbox {
  readonly id: string;
  readonly token: string;
  readonly key: SimKey;
  readonly tenant: string | undefined;
  readonly claimRef: string | undefined;
  readonly fromCheckpoint: string | undefined;
  readonly templateDigest: string | undefined;
  /** The granted lease, reused by a wake from the archive. */
  ttlS: number;
  readonly claimedAt: number;
  deadline: number;
  state: VmState;
  /** Start of the idle clock (grant, then each explicit wake). */
  idleSince: number;
  hibernatedAt: number;

  constructor(init: SandboxInit) {
    this.id = init.id;
    this.token = init.token;
    this.key = init.key;
    this.tenant = init.tenant;
    this.claimRef = init.claimRef;
    this.fromCheckpoint = init.fromCheckpoint;
    this.templateDigest = init.templateDigest;
    this.ttlS = init.ttlS;
    this.claimedAt = init.now;
    this.deadline = init.now + init.ttlS * 1000;
    this.state = RUNNING;
    this.idleSince = init.now;
    this.hibernatedAt = 0;
  }
}

export const DEFAULT_TTL_S = 300;
export const MAX_TTL_S = 86_400;

/** 0 or negative → the node's default lease (300 s unless configured); above 24 h → clamped. */
export function grantTtl(ttlSeconds: number | null | undefined, defaultTtlS = DEFAULT_TTL_S): number {
  if (!ttlSeconds || ttlSeconds <= 0) return Math.min(defaultTtlS || DEFAULT_TTL_S, MAX_TTL_S);
  return Math.min(ttlSeconds, MAX_TTL_S);
}
