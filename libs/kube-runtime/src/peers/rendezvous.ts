import { createHash } from 'node:crypto';

/**
 * Rendezvous (highest-random-weight) hashing: the owner of `key` is the peer with the highest
 * hash of `peer + key`. Every replica that sees the same peer set picks the same owner without
 * talking to the others, and when one peer leaves or joins only the keys it owned (or now owns)
 * move: about 1/n of them, never a reshuffle of all.
 */
export function ownerOf(key: string, peers: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestWeight = '';
  for (const peer of peers) {
    const w = weightOf(peer, key);
    // ties (never seen with sha256, but the order of `peers` must not matter) go to the smaller id
    if (best === undefined || w > bestWeight || (w === bestWeight && peer < best)) {
      best = peer;
      bestWeight = w;
    }
  }
  return best;
}

/** A fixed-width hex weight: string order is numeric order. */
function weightOf(peer: string, key: string): string {
  return createHash('sha256').update(peer).update('\u0000').update(key).digest('hex').slice(0, 16);
}
