import { createHash, createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
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
 *
 * It is a keyring so the key can rotate without disowning a single VM: a new key first verifies
 * only, then signs while the old one still verifies references already on nodes, and a key
 * removed from the ring stops verifying at once.
 */
export class OwnerRefKey {
  // the first signs; every one verifies (a rotation adds the new key, later drops the old)
  #keys: readonly KeyObject[];
  #ids: readonly string[];

  /** `keys`: each at least 32 bytes (the keeper makes 32 random bytes); the first signs. */
  constructor(keys: Uint8Array | readonly Uint8Array[]) {
    const list = keys instanceof Uint8Array ? [keys] : [...keys];
    if (list.length === 0) throw new InvalidOwnerRefKeyError('a claim reference keyring needs a key');
    if (list.length > MAX_KEYS)
      throw new InvalidOwnerRefKeyError(`a claim reference keyring holds at most ${MAX_KEYS} keys, got ${list.length}`);
    for (const k of list)
      if (k.byteLength < MIN_KEY_BYTES)
        throw new InvalidOwnerRefKeyError(`a claim reference key needs at least ${MIN_KEY_BYTES} bytes, got ${k.byteLength}`);
    this.#keys = list.map((k) => createSecretKey(k));
    this.#ids = list.map(keyId);
  }

  /**
   * The keyring as a Secret mount or env var holds it: one key per line, each base64 (standard or
   * url-safe) of at least 32 bytes; the first line signs, every line verifies; blank lines and
   * surrounding whitespace are ignored. Anything else is refused whole, so a truncated mount
   * never becomes a weak key.
   */
  static fromText(text: string): OwnerRefKey {
    const lines = text
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '');
    lines.forEach((l, i) => {
      if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(l))
        throw new InvalidOwnerRefKeyError(`a claim reference key must be base64 text (line ${i + 1})`);
    });
    return new OwnerRefKey(lines.map((l) => Buffer.from(l, 'base64')));
  }

  /**
   * Takes `next`'s keys in place, so every holder of this object signs and verifies with them
   * from now on (a followed key file changed).
   */
  replaceWith(next: OwnerRefKey): void {
    this.#keys = next.#keys;
    this.#ids = next.#ids;
  }

  /**
   * A short fingerprint of each key, the signing one first: a hash, never the key, so metrics and
   * logs can say which keys a replica holds.
   */
  get ids(): readonly string[] {
    return this.#ids;
  }

  /**
   * The MAC of `signed` (a reference without its MAC segment), made with the signing key. Another
   * `domain` MACs something else with the same keyring, so a MAC of one kind never passes as one
   * of another.
   */
  mac(signed: string, domain: string = DOMAIN): string {
    return macWith(this.#keys[0] as KeyObject, signed, domain);
  }

  /** Whether `mac` is the MAC of `signed` under any key held, each compared in constant time. */
  verify(signed: string, mac: string, domain: string = DOMAIN): boolean {
    if (mac.length !== MAC_CHARS) return false;
    const got = Buffer.from(mac, 'ascii');
    if (got.length !== MAC_CHARS) return false;
    let ok = false;
    // every key is tried, so the time taken does not say which one matched
    for (const k of this.#keys) ok = timingSafeEqual(got, Buffer.from(macWith(k, signed, domain), 'ascii')) || ok;
    return ok;
  }

  /** Never the key itself. */
  toJSON(): string {
    return '[OwnerRefKey]';
  }
}

function macWith(key: KeyObject, signed: string, domain: string): string {
  return createHmac('sha256', key).update(domain).update(signed).digest().subarray(0, MAC_BYTES).toString('base64url');
}

// a separate domain from the MAC's, so an id says nothing about any MAC
function keyId(key: Uint8Array): string {
  return createHash('sha256').update(ID_DOMAIN).update(key).digest('hex').slice(0, 12);
}

/** The key text is missing, not base64, or too short. */
export class InvalidOwnerRefKeyError extends SandboxScaleError {}

export function isInvalidOwnerRefKey(err: unknown): boolean {
  return findInCauseChain(err, 'InvalidOwnerRefKeyError') !== undefined;
}

const MIN_KEY_BYTES = 32;
// a rotation holds two or three at once; more is a file that is not a keyring
const MAX_KEYS = 8;
const MAC_BYTES = 16;
/** base64url of 16 bytes, unpadded. */
export const MAC_CHARS = 22;
// binds a MAC to this use, so the key could never vouch for another kind of string
const DOMAIN = 'sandbox-scale/claim-ref/v1\n';
const ID_DOMAIN = 'sandbox-scale/claim-ref-key-id/v1\n';
