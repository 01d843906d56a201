/** A source of uniform numbers in [0, 1), like Math.random. Injected so tests are reproducible. */
export type Rng = () => number;

/** Mulberry32: a tiny seeded generator, good enough for sampling and jitter, never for secrets. */
export function seededRng(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A uniform index in [0, n); clamps an rng that returns exactly 1. */
export function randomIndex(rng: Rng, n: number): number {
  return Math.min(n - 1, Math.floor(rng() * n));
}
