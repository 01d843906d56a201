import { findInCauseChain, SandboxScaleError } from '../errors/base';
import { isDns1123Label } from '../names/dns1123';
import { MAC_CHARS, type OwnerRefKey } from './owner-ref-key';

/**
 * The owner of a sandbox, as its sandboxd `claim_ref` records it on the node. The node keeps
 * the string for the sandbox's whole life and lists deliveries by it, so it must say exactly
 * which object a VM belongs to: a SandboxClaim and a Sandbox of the same namespace/name, or a
 * claim deleted and created again under the same name, are different owners.
 *
 * Wire form: `<kind>:<uid>:<mac>:<namespace>/<name>`, e.g. `claim:6a1f…:Qm9…:team-a/build-1`.
 * `<mac>` proves this control plane wrote the reference (OwnerRefKey: a keyed MAC over the rest,
 * the `+renew` flag included). The name comes last so a fork's `claim_ref_prefix`
 * (`fork:<uid>:<mac>:<ns>/<parent>-`) plus the child id the node appends is a whole reference
 * naming the child; a fork's MAC covers the name up to its last `-`, so the child id the node
 * chooses is the one part it proves nothing about. Namespaces, names, uids and base64url never
 * contain `:`, so the split is unambiguous; at most 14 (`snapshot+renew`) + 1 + 36 + 1 + 22 + 1
 * + 63 + 1 + 253 = 392 bytes.
 *
 * A reference without a MAC (`<kind>:<uid>:<namespace>/<name>`, as earlier releases wrote, or
 * one a node made up) or with a wrong one still parses, so its sandbox is served under its
 * namespace/name, but it is not `proven`: nothing adopts, records, renews or releases through
 * it. Older releases still wrote `<namespace>/<name>`; such a reference is parsed as `legacy`
 * and owns nothing either (see docs/security.md).
 */

/** Kinds of owner, by their wire token. */
export const OWNER_KINDS = {
  /** A SandboxClaim bound by claim-controller; uid = the claim's metadata.uid. */
  claim: 'SandboxClaim',
  /**
   * A fast-path delivery (POST /v1/claims) whose SandboxClaim is written after the VM is handed
   * over; uid = the delivery uid claim-controller chose, carried by the claim it creates in the
   * `sandbox.cocoonstack.io/delivery-uid` annotation.
   */
  fastclaim: 'FastPathClaim',
  /** A Sandbox created through the aggregated API; uid = the Sandbox's creation uid. */
  sandbox: 'Sandbox',
  /** A fork child; uid = the fork call's uid, name = `<parent>-<child id>`. */
  fork: 'ForkChild',
  /** A sandbox claimed from a snapshot; uid = the claim call's uid. */
  snapshot: 'SnapshotClaim',
} as const;

export type OwnerKindToken = keyof typeof OWNER_KINDS;
export type OwnerKind = (typeof OWNER_KINDS)[OwnerKindToken];

export interface SandboxOwner {
  kind: OwnerKind;
  uid: string;
  namespace: string;
  name: string;
  /**
   * The sandbox lives until its owner deletes it: whoever keeps leases renews its node lease
   * (wire: `+renew` after the kind token). Only for owners with no object of their own that
   * could say so (aggregated-API Sandboxes, fork children, snapshot claims created without a TTL);
   * a SandboxClaim's lifecycle is in the claim itself. Not part of the owner's identity.
   */
  renewed?: boolean;
  /**
   * Set by parseOwnerRef when it was given the key and the reference's MAC is right: this control
   * plane wrote it. Not part of the owner's identity.
   */
  proven?: true;
}

/** A pre-uid `<namespace>/<name>` reference: names a served Sandbox, owns nothing. */
export interface LegacyOwner {
  kind: 'legacy';
  namespace: string;
  name: string;
}

export type ParsedOwnerRef = SandboxOwner | LegacyOwner;

const TOKEN_OF: Record<OwnerKind, OwnerKindToken> = Object.fromEntries(Object.entries(OWNER_KINDS).map(([t, k]) => [k, t])) as Record<
  OwnerKind,
  OwnerKindToken
>;
// Kubernetes uids and the random ones drawn here are UUIDs (36 characters): the length budget above counts 36
const UID = /^[0-9A-Za-z-]{1,36}$/;
// Object names, plus `_` for fork children (`<parent>-sb_…`); never `/` or `:`.
const NAME = /^[A-Za-z0-9._-]{1,253}$/;

/** Thrown when a reference would not parse back to the owner it was made from. */
export class InvalidOwnerRefError extends SandboxScaleError {}

export function isInvalidOwnerRef(err: unknown): boolean {
  return findInCauseChain(err, 'InvalidOwnerRefError') !== undefined;
}

function check(o: Omit<SandboxOwner, 'name'> & { name: string }, namePrefix: boolean): void {
  if (TOKEN_OF[o.kind] === undefined) throw new InvalidOwnerRefError(`unknown owner kind ${JSON.stringify(o.kind)}`);
  if (!UID.test(o.uid)) throw new InvalidOwnerRefError(`owner uid ${JSON.stringify(o.uid)} is not a uid`);
  if (!isDns1123Label(o.namespace)) throw new InvalidOwnerRefError(`owner namespace ${JSON.stringify(o.namespace)} is not a DNS label`);
  if (!(namePrefix && o.name === '') && !NAME.test(o.name))
    throw new InvalidOwnerRefError(`owner name ${JSON.stringify(o.name)} is not an object name`);
}

/** The claim_ref of `owner`, proven with `key`. Throws InvalidOwnerRefError for an owner that would not parse back. */
export function formatOwnerRef(owner: SandboxOwner, key: OwnerRefKey): string {
  check(owner, false);
  return sealed(owner, owner.name, key);
}

const RENEW_FLAG = '+renew';

function kindToken(owner: Pick<SandboxOwner, 'kind' | 'renewed'>): string {
  return `${TOKEN_OF[owner.kind]}${owner.renewed ? RENEW_FLAG : ''}`;
}

/**
 * A fork's claim_ref_prefix: the node appends each child's id, so every child's reference
 * names `<namePrefix><child id>`. The prefix ends in `-` and the MAC covers it whole, so each
 * child's reference is proven as long as the node's child id holds no `-` (sandboxd's are
 * `sb_` + hex).
 */
export function formatOwnerRefPrefix(owner: SandboxOwner, key: OwnerRefKey): string {
  check(owner, true);
  if (owner.kind === OWNER_KINDS.fork && !owner.name.endsWith('-'))
    throw new InvalidOwnerRefError(`fork name prefix ${JSON.stringify(owner.name)} must end in "-"`);
  return sealed(owner, owner.name, key);
}

/** `<kind>:<uid>:<mac>:<ns>/<name>`, the MAC over the same without it. */
function sealed(owner: Omit<SandboxOwner, 'name'>, name: string, key: OwnerRefKey): string {
  const token = kindToken(owner);
  const mac = key.mac(signedText(token, owner.uid, owner.namespace, signedName(owner.kind, name)));
  return `${token}:${owner.uid}:${mac}:${owner.namespace}/${name}`;
}

function signedText(token: string, uid: string, namespace: string, name: string): string {
  return `${token}:${uid}:${namespace}/${name}`;
}

/** What of a name the MAC covers: all of it, except for a fork child the id the node appended after the last `-`. */
function signedName(kind: OwnerKind, name: string): string {
  return kind === OWNER_KINDS.fork ? name.slice(0, name.lastIndexOf('-') + 1) : name;
}

/**
 * Parses a claim_ref: an owner, a legacy `<namespace>/<name>`, or undefined for anything else
 * (no reference, another tool's string). With `key`, an owner whose MAC is right comes back
 * `proven`; without it nothing is proven (listing needs no key). Pure; never throws.
 */
export function parseOwnerRef(ref: string | undefined, key?: OwnerRefKey): ParsedOwnerRef | undefined {
  if (!ref) return undefined;
  const first = ref.indexOf(':');
  if (first < 0) {
    const slash = ref.indexOf('/');
    if (slash <= 0 || slash === ref.length - 1) return undefined;
    return { kind: 'legacy', namespace: ref.slice(0, slash), name: ref.slice(slash + 1) };
  }
  const second = ref.indexOf(':', first + 1);
  if (second < 0) return undefined;
  const token = ref.slice(0, first);
  const renewed = token.endsWith(RENEW_FLAG);
  const kind = OWNER_KINDS[(renewed ? token.slice(0, -RENEW_FLAG.length) : token) as OwnerKindToken] as OwnerKind | undefined;
  const uid = ref.slice(first + 1, second);
  let rest = ref.slice(second + 1);
  // a third `:` ends the MAC (namespaces and names never hold one); without it the reference carries none
  const third = rest.indexOf(':');
  const mac = third < 0 ? undefined : rest.slice(0, third);
  if (third >= 0) rest = rest.slice(third + 1);
  const slash = rest.indexOf('/');
  if (kind === undefined || slash < 0 || (mac !== undefined && mac.length !== MAC_CHARS)) return undefined;
  const owner: SandboxOwner = {
    kind,
    uid,
    namespace: rest.slice(0, slash),
    name: rest.slice(slash + 1),
    ...(renewed ? { renewed: true } : {}),
  };
  try {
    check(owner, false);
  } catch {
    return undefined;
  }
  if (key !== undefined && mac !== undefined && key.verify(signedText(token, uid, owner.namespace, signedName(kind, owner.name)), mac))
    owner.proven = true;
  return owner;
}

/** The owner of `ref` when this control plane wrote it (its MAC is right under `key`); else undefined. */
export function provenOwnerOf(ref: string | undefined, key: OwnerRefKey): SandboxOwner | undefined {
  const o = parseOwnerRef(ref, key);
  return isUidOwner(o) && o.proven === true ? o : undefined;
}

/** An owner with a uid (not legacy). */
export function isUidOwner(o: ParsedOwnerRef | undefined): o is SandboxOwner {
  return o !== undefined && o.kind !== 'legacy';
}

/** Exact identity: kind, uid, namespace and name all equal. A legacy reference matches nothing. */
export function sameOwner(a: ParsedOwnerRef | undefined, b: ParsedOwnerRef | undefined): boolean {
  if (!isUidOwner(a) || !isUidOwner(b)) return false;
  return a.kind === b.kind && a.uid === b.uid && a.namespace === b.namespace && a.name === b.name;
}

/**
 * The `<namespace>/<name>` a node's entry is served under: the owner's, for a reference that
 * parses; else undefined (the caller falls back to the sandbox id).
 */
export function servedNameOf(ref: string | undefined): string | undefined {
  const o = parseOwnerRef(ref);
  return o ? `${o.namespace}/${servedObjectName(o.name)}` : undefined;
}

/**
 * A valid object name for what a node names with `_`: a fork child's `<parent>-sb_12` is served as
 * `<parent>-sb-12`, and a sandbox with no owner as `sb-12`. Object names (DNS-1123 subdomains)
 * never hold `_`, so this changes nothing else and never makes two names one.
 */
export function servedObjectName(name: string): string {
  return name.replaceAll('_', '-');
}
