import { findInCauseChain, SandboxScaleError } from '../errors/base';
import { isDns1123Label } from '../names/dns1123';

/**
 * The owner of a sandbox, as its sandboxd `claim_ref` records it on the node. The node keeps
 * the string for the sandbox's whole life and lists deliveries by it, so it must say exactly
 * which object a VM belongs to: a SandboxClaim and a Sandbox of the same namespace/name, or a
 * claim deleted and created again under the same name, are different owners.
 *
 * Wire form: `<kind>:<uid>:<namespace>/<name>`, e.g. `claim:6a1f…:team-a/build-1`. The name
 * comes last so a fork's `claim_ref_prefix` (`fork:<uid>:<ns>/<parent>-`) plus the child id
 * the node appends is a whole reference naming the child. Namespaces, names and uids never
 * contain `:`, so the split is unambiguous; at most 9 + 1 + 64 + 1 + 63 + 1 + 253 = 392 bytes.
 *
 * Older releases wrote `<namespace>/<name>`. Such a reference is parsed as `legacy`: it still
 * names the served Sandbox, but it carries no uid, so nothing adopts, records or releases
 * through it (see docs/security.md).
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
const UID = /^[0-9A-Za-z-]{1,64}$/;
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

/** The claim_ref of `owner`. Throws InvalidOwnerRefError for an owner that would not parse back. */
export function formatOwnerRef(owner: SandboxOwner): string {
  check(owner, false);
  return `${kindToken(owner)}:${owner.uid}:${owner.namespace}/${owner.name}`;
}

const RENEW_FLAG = '+renew';

function kindToken(owner: SandboxOwner): string {
  return `${TOKEN_OF[owner.kind]}${owner.renewed ? RENEW_FLAG : ''}`;
}

/**
 * A fork's claim_ref_prefix: the node appends each child's id, so every child's reference
 * names `<namePrefix><child id>`.
 */
export function formatOwnerRefPrefix(owner: SandboxOwner): string {
  check(owner, true);
  return `${kindToken(owner)}:${owner.uid}:${owner.namespace}/${owner.name}`;
}

/**
 * Parses a claim_ref: an owner, a legacy `<namespace>/<name>`, or undefined for anything else
 * (no reference, another tool's string). Pure; never throws.
 */
export function parseOwnerRef(ref: string | undefined): ParsedOwnerRef | undefined {
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
  const rest = ref.slice(second + 1);
  const slash = rest.indexOf('/');
  if (kind === undefined || slash < 0) return undefined;
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
  return owner;
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
