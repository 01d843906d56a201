import { createHash } from 'node:crypto';

/**
 * Which sandbox a checkpoint was taken from, written into the checkpoint's own name on the
 * node, so its snapshots stay listable, claimable and deletable after the sandbox is gone and
 * any replica (or one restarted) finds them again from the nodes' checkpoint lists alone.
 *
 * A node keeps a checkpoint's id, name, source sandbox id, pool key and tenant, and nothing of
 * the claim reference the source sandbox had; its name (≤ 63 characters of
 * `[a-zA-Z0-9._:/-]`) is the only field we choose. `<namespace>/<name>` does not fit (a name
 * alone may be 253 characters), so the name carries a digest of it: `s:<24 base32 chars>`
 * (120 bits of SHA-256), then `/<label>` when the caller named the snapshot. A tenant reaches
 * a checkpoint only through a sandbox name in its own namespace, and finding a second
 * `namespace/name` with the same digest is a 2^120 search, so no namespace reaches another's.
 */

const TAG_PREFIX = 's:';
const TAG_CHARS = 24;
const TAGGED = new RegExp(`^(${TAG_PREFIX}[a-z2-7]{${TAG_CHARS}})(?:/(.+))?$`);
/** sandboxd's checkpoint name rule. */
const NODE_NAME_MAX = 63;

/** Longest label a snapshot may carry next to its owner's digest. */
export const MAX_SNAPSHOT_LABEL = NODE_NAME_MAX - TAG_PREFIX.length - TAG_CHARS - 1;
/** What a label may hold: sandboxd's name characters, starting with a letter or digit. */
export const SNAPSHOT_LABEL = new RegExp(`^[a-zA-Z0-9][a-zA-Z0-9._:/-]{0,${MAX_SNAPSHOT_LABEL - 1}}$`);

const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

function base32(bytes: Uint8Array, chars: number): string {
  let out = '';
  let acc = 0;
  let bits = 0;
  for (const b of bytes) {
    acc = ((acc << 8) | b) & 0xffff;
    bits += 8;
    while (bits >= 5 && out.length < chars) {
      out += BASE32[(acc >> (bits - 5)) & 31];
      bits -= 5;
    }
    if (out.length >= chars) break;
  }
  return out;
}

/** The digest every snapshot of `namespace/name` carries; the same in every replica and every run. */
export function ownerTag(namespace: string, name: string): string {
  const digest = createHash('sha256').update('agents.x-k8s.io/sandboxes\u0000').update(namespace).update('\u0000').update(name).digest();
  return TAG_PREFIX + base32(digest, TAG_CHARS);
}

/** The name a checkpoint is taken under on the node. */
export function checkpointName(tag: string, label: string | undefined): string {
  return label ? `${tag}/${label}` : tag;
}

/**
 * A node's checkpoint name read back: the owner digest and the caller's label, or no digest for
 * a checkpoint taken before snapshots carried one (or directly on the node), whose whole name
 * is its label.
 */
export function parseCheckpointName(name: string | undefined): { tag?: string; label?: string } {
  if (name === undefined || name === '') return {};
  const m = TAGGED.exec(name);
  if (m === null) return { label: name };
  return { tag: m[1] as string, ...(m[2] ? { label: m[2] } : {}) };
}
