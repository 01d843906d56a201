import type { Rng } from '../node-choice/random';

/**
 * When a holder renews a node lease: at a point between four and six tenths of it, fixed per
 * sandbox and spread at random, so a renewal comes well before the deadline (a renewer that
 * looks every eighth of a lease still renews before three quarters of it) and leases granted
 * together (a burst of claims) are not renewed together. One rule for every renewer.
 */
export const RENEWAL_WINDOW = { from: 0.4, to: 0.6 } as const;

/** A sandbox's point in its lease, drawn once and kept for its life. */
export function renewalFraction(rng: Rng = Math.random): number {
  return RENEWAL_WINDOW.from + (RENEWAL_WINDOW.to - RENEWAL_WINDOW.from) * rng();
}

/** The moment to renew a lease granted at `grantedAtMs` that runs out at `deadlineMs`. */
export function leaseRenewAtMs(grantedAtMs: number, deadlineMs: number, fraction: number): number {
  return grantedAtMs + (deadlineMs - grantedAtMs) * fraction;
}
