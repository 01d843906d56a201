import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import { SandboxScaleError, findInCauseChain } from '../errors/base';

/**
 * The key this control plane proves its own claim references with. A node, or a tenant holding a
 * node token, can write any claim_ref on a VM; claim-controller and sandbox-apiserver act on a
 * reference (adopt it, create its SandboxClaim and token Secret, renew its lease) only when it
 * carries a MAC made with this key, so only references this control plane wrote steer it.
 *
 * The MAC is HMAC-SHA256 over a domain tag plus the reference without its MAC, truncated to
 * 128 bits and written as 22 base64url characters. 128 bits leave a forger a 2^-128 chance per
 * guess, and the node answers no oracle: a wrong MAC only leaves the VM unadopted.
 */
export class OwnerRefKey {
  readonly #key: KeyObject;

  /** `key`: at least 32 bytes (the chart generates 32 random bytes). */
  constructor(key: Uint8Array) {
    if (key.byteLength < MIN_KEY_BYTES)
      throw new InvalidOwnerRefKeyError(`a claim reference key needs at least ${MIN_KEY_BYTES} bytes, got ${key.byteLength}`);
    this.#key = createSecretKey(key);
  }

  /**
   * The key as a Secret mount or env var holds it: base64 (standard or url-safe) of at least
   * 32 bytes, whitespace trimmed. Anything else is refused, so a truncated mount never becomes
   * a weak key.
   */
  static fromText(text: string): OwnerRefKey {
    const t = text.trim();
    if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(t)) throw new InvalidOwnerRefKeyError('a claim reference key must be base64 text');
    return new OwnerRefKey(Buffer.from(t, 'base64'));
  }

  /** The MAC of `signed` (a reference without its MAC segment). */
  mac(signed: string): string {
    return createHmac('sha256', this.#key).update(DOMAIN).update(signed).digest().subarray(0, MAC_BYTES).toString('base64url');
  }

  /** Whether `mac` is the MAC of `signed`, compared in constant time. */
  verify(signed: string, mac: string): boolean {
    if (mac.length !== MAC_CHARS) return false;
    const want = Buffer.from(this.mac(signed), 'ascii');
    const got = Buffer.from(mac, 'ascii');
    return got.length === want.length && timingSafeEqual(got, want);
  }

  /** Never the key itself. */
  toJSON(): string {
    return '[OwnerRefKey]';
  }
}

/** The key text is missing, not base64, or too short. */
export class InvalidOwnerRefKeyError extends SandboxScaleError {}

export function isInvalidOwnerRefKey(err: unknown): boolean {
  return findInCauseChain(err, 'InvalidOwnerRefKeyError') !== undefined;
}

const MIN_KEY_BYTES = 32;
const MAC_BYTES = 16;
/** base64url of 16 bytes, unpadded. */
export const MAC_CHARS = 22;
// binds a MAC to this use, so the key could never vouch for another kind of string
const DOMAIN = 'sandbox-scale/claim-ref/v1\n';
