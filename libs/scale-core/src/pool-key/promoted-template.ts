import { createHash } from 'node:crypto';

/**
 * The node-side name of a template a namespace promotes. sandboxd's templates are node-wide and
 * keyed by name, and a name may be an image reference, which is what every pool key is made of:
 * a promote under a user's own word could replace another tenant's template, or shadow the image
 * its pool claims from. So the user names the template within the namespace, and the node is told
 * `promoted..<digest>`, the digest 96 bits of SHA-256 over `namespace/name` (as checkpoint names
 * are scoped): `..` may not stand in an image reference, so no pool key is ever such a name, and
 * only sandboxes of that namespace promote under its digests. It fits sandboxd's 63 characters.
 */
export const PROMOTED_PREFIX = 'promoted..';

/** What a user may call a promoted template: a DNS-1123 subdomain-like word, at most 63 characters. */
const TEMPLATE_NAME = /^[a-z0-9]([-a-z0-9._]{0,61}[a-z0-9])?$/;

export function promotedTemplateName(namespace: string, name: string): string {
  return `${PROMOTED_PREFIX}${createHash('sha256').update(`${namespace}/${name}`).digest('hex').slice(0, 24)}`;
}

/** Why a user's promoted-template name is refused, or undefined when it is a valid one. */
export function invalidPromotedName(name: string): string | undefined {
  if (TEMPLATE_NAME.test(name)) return undefined;
  return 'must be lowercase letters, digits, "-", "." or "_", start and end with a letter or digit, and be at most 63 characters (it names the template within the namespace)';
}
