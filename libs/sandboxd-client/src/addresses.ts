/**
 * Node addresses: sandboxd hands out `host:port` (its advertise_addr) or a full origin
 * (client_advertise). A bare address inherits the scheme of the URL that was dialed.
 */

/** `http://host:port/` or bare `host:port` → `http://host:port` (no trailing slash). */
export function normalizeBaseUrl(base: string): string {
  const trimmed = base.trim().replace(/\/+$/, '');
  if (trimmed === '') throw new TypeError('sandboxd base URL is empty');
  return hasScheme(trimmed) ? trimmed : `http://${trimmed}`;
}

/** Resolves an address from a reply (redirect, owner_addr) against the node that sent it. */
export function resolveNodeAddr(addr: string, dialedUrl: string): string {
  const trimmed = addr.trim().replace(/\/+$/, '');
  if (trimmed === '') return dialedUrl;
  if (hasScheme(trimmed)) return trimmed;
  return `${new URL(dialedUrl).protocol}//${trimmed}`;
}

function hasScheme(s: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(s);
}
