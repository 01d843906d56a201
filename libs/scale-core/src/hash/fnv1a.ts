const FNV64_OFFSET = 14695981039346656037n;
const FNV64_PRIME = 1099511628211n;
const MASK64 = (1n << 64n) - 1n;

const FNV32_OFFSET = 0x811c9dc5;
const FNV32_PRIME = 0x01000193;

const utf8 = new TextEncoder();

/** 64-bit FNV-1a over the UTF-8 bytes of `s`, as an unsigned decimal string. */
export function fnv1a64(s: string): string {
  let h = FNV64_OFFSET;
  for (const b of utf8.encode(s)) {
    h ^= BigInt(b);
    h = (h * FNV64_PRIME) & MASK64;
  }
  return h.toString(10);
}

/** 32-bit FNV-1a over the UTF-8 bytes of `s`. */
export function fnv1a32(s: string): number {
  let h = FNV32_OFFSET;
  for (const b of utf8.encode(s)) {
    h ^= b;
    h = Math.imul(h, FNV32_PRIME) >>> 0;
  }
  return h >>> 0;
}

/**
 * Upstream agent-sandbox's `NameHash`: FNV-1a 32 as 8 lowercase hex digits, the value of the
 * `agents.x-k8s.io/warm-pool-sandbox` and `sandbox-template-ref-hash` labels.
 */
export function nameHash(name: string): string {
  return fnv1a32(name).toString(16).padStart(8, '0');
}
