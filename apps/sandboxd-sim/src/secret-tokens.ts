import { randomFillSync } from 'node:crypto';

/** Bytes of one sandbox token (32 hex characters). */
const TOKEN_BYTES = 16;
/** Tokens drawn per refill: one kernel call per this many claims rather than one per claim. */
const TOKENS_PER_FILL = 256;

/**
 * Sandbox bearer tokens: real secrets from the CSPRNG, drawn in batches. `randomBytes(16)` per
 * claim is a getrandom call per claim, a visible share of a warm claim's CPU on a loaded host;
 * a batch read once and handed out slice by slice (each slice exactly once, as Node's own
 * randomUUID buffers its bytes) costs the same entropy and one call per TOKENS_PER_FILL tokens.
 */
export class SecretTokens {
  readonly #pool = Buffer.alloc(TOKEN_BYTES * TOKENS_PER_FILL);
  #offset = this.#pool.length;

  next(): string {
    if (this.#offset >= this.#pool.length) {
      randomFillSync(this.#pool);
      this.#offset = 0;
    }
    const token = this.#pool.toString('hex', this.#offset, this.#offset + TOKEN_BYTES);
    // what was handed out is not kept in memory
    this.#pool.fill(0, this.#offset, this.#offset + TOKEN_BYTES);
    this.#offset += TOKEN_BYTES;
    return token;
  }
}
