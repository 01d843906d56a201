import { createHash } from 'node:crypto';

/** The UUIDv5 namespace of sandbox-scale object UIDs (random, fixed forever). */
export const SANDBOX_UID_NAMESPACE = '0b60143b-4820-4a1f-9a6e-7d5a345adb32';

function uuidBytes(uuid: string): Buffer {
  return Buffer.from(uuid.replace(/-/g, ''), 'hex');
}

/** Every served object's uid hashes under this namespace: its bytes are computed once. */
const DEFAULT_NAMESPACE_BYTES = uuidBytes(SANDBOX_UID_NAMESPACE);

/** RFC 9562 UUIDv5 (SHA-1 of namespace + name): the same name always gives the same UUID. */
export function uuidV5(name: string, namespace: string = SANDBOX_UID_NAMESPACE): string {
  const hash = createHash('sha1')
    .update(namespace === SANDBOX_UID_NAMESPACE ? DEFAULT_NAMESPACE_BYTES : uuidBytes(namespace))
    .update(name, 'utf8')
    .digest();
  const b = hash.subarray(0, 16);
  b[6] = ((b[6] ?? 0) & 0x0f) | 0x50;
  b[8] = ((b[8] ?? 0) & 0x3f) | 0x80;
  const hex = b.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/**
 * The uid of a sandbox, from the node that holds it and its sandboxd claim id. The Create
 * response and every later read compute the same value, which kubectl delete --wait, the
 * garbage collector and informers rely on; the reference mints a random uid
 * on Create and serves none on reads. A sandbox the node has not yet given an id falls back to
 * its namespace/name, and changes uid once the id is published.
 */
export function sandboxUid(node: string, claimId: string, fallbackName = ''): string {
  return uuidV5(claimId === '' ? `${node}\u0000name\u0000${fallbackName}` : `${node}\u0000${claimId}`);
}
