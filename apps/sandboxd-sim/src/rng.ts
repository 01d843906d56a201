/**
 * Seeded randomness (sfc32): reproducible boot latencies, ids, fault draws and redirect
 * picks. Tokens do not come from here; they are real random secrets.
 */
export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [0, n). */
  int(n: number): number;
  /** `prefix` + 16 lowercase hex characters, as one flat string (see flatId). */
  id(prefix: string): string;
  /** Standard normal draw. */
  normal(): number;
}

export function createRng(seed: number): Rng {
  let a = 0x9e3779b9 ^ seed;
  let b = 0x243f6a88 ^ Math.imul(seed, 0x85ebca6b);
  let c = 0xb7e15162 ^ Math.imul(seed, 0xc2b2ae35);
  let d = 1;
  const u32 = (): number => {
    a >>>= 0;
    b >>>= 0;
    c >>>= 0;
    d >>>= 0;
    const t = (a + b + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) >>> 0;
    return t;
  };
  for (let i = 0; i < 15; i++) u32();
  const next = (): number => u32() / 4294967296;
  return {
    next,
    int: (n) => Math.floor(next() * n),
    id: (prefix) => flatId(prefix, u32(), u32()),
    normal: () => {
      const u = 1 - next();
      const v = next();
      return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
    },
  };
}

/** A distinct, stable seed per simulated node of one run. */
export function nodeSeed(seed: number, index: number): number {
  return (Math.imul(seed ^ 0x5bd1e995, 0x27d4eb2d) + Math.imul(index + 1, 0x165667b1)) | 0;
}

const HEX = '0123456789abcdef';

/**
 * Builds the id in one buffer: concatenating strings would leave V8 cons-string trees
 * (about 70 extra bytes per id), and a million sandboxes keep their ids alive.
 */
function flatId(prefix: string, hi: number, lo: number): string {
  const buf = Buffer.allocUnsafe(prefix.length + 16);
  buf.write(prefix, 0, 'latin1');
  for (let i = 0; i < 8; i++) {
    buf[prefix.length + i] = HEX.charCodeAt((hi >>> (28 - 4 * i)) & 15);
    buf[prefix.length + 8 + i] = HEX.charCodeAt((lo >>> (28 - 4 * i)) & 15);
  }
  return buf.toString('latin1');
}
