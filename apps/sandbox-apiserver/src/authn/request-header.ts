import type { X509Certificate } from 'node:crypto';
import { isPrototypeKey } from '@sandbox-scale/scale-core';
import type { AuthenticationConfig } from './auth-config';
import { subjectOf, verifiedBy } from './client-cert';
import type { UserInfo } from './user-info';

/** Every header value as sent, one entry per header line (Node's `headersDistinct`). */
export type DistinctHeaders = NodeJS.Dict<string[]>;

// One entry per header line, never split on ',': a name may hold a comma, and kube's front
// proxy sends one X-Remote-Group line per group (k8s requestheader allHeaderValues).
function values(headers: DistinctHeaders, name: string): string[] {
  return (headers[name.toLowerCase()] ?? []).filter((s) => s !== '');
}

// Extra keys travel percent-encoded (kube's unescapeExtraKey); one that does not decode is kept as sent.
function extraKey(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/**
 * Front-proxy authentication (the first step): the peer certificate chains to the
 * requestheader CA and carries an allowed name; identity comes from the X-Remote-* headers.
 * Undefined when the certificate does not qualify or no username header is set.
 */
export function authenticateRequestHeader(
  cert: X509Certificate | undefined,
  headers: DistinctHeaders,
  cfg: AuthenticationConfig,
  cas: readonly X509Certificate[],
): UserInfo | undefined {
  if (cert === undefined || cas.length === 0 || !verifiedBy(cert, cas)) return undefined;
  if (cfg.allowedNames.length > 0 && !cfg.allowedNames.includes(subjectOf(cert).commonName)) return undefined;
  const username = cfg.usernameHeaders.map((h) => values(headers, h)[0]).find((v) => v !== undefined);
  if (username === undefined) return undefined;
  const groups = cfg.groupHeaders.flatMap((h) => values(headers, h));
  const uid = cfg.uidHeaders.map((h) => values(headers, h)[0]).find((v) => v !== undefined);
  const extra: Record<string, string[]> = {};
  for (const [name, raw] of Object.entries(headers)) {
    const prefix = cfg.extraHeaderPrefixes.find((p) => name.startsWith(p.toLowerCase()));
    if (prefix === undefined || raw === undefined) continue;
    const key = extraKey(name.slice(prefix.length).toLowerCase());
    // an identity whose extra cannot be held as an ordinary map is not taken: refused, never trimmed
    if (isPrototypeKey(key)) return undefined;
    const vals = raw.filter((v) => v !== '');
    if (key !== '' && vals.length > 0) extra[key] = [...(Object.hasOwn(extra, key) ? (extra[key] ?? []) : []), ...vals];
  }
  return { username, ...(uid ? { uid } : {}), groups, extra };
}

/** Removes every header that could be mistaken for a front-proxy identity. */
export function stripRemoteHeaders(headers: NodeJS.Dict<string | string[]>, cfg: AuthenticationConfig): void {
  const prefixes = [...cfg.usernameHeaders, ...cfg.groupHeaders, ...cfg.uidHeaders, ...cfg.extraHeaderPrefixes].map((h) => h.toLowerCase());
  for (const name of Object.keys(headers)) {
    if (prefixes.some((p) => name === p || name.startsWith(p))) delete headers[name];
  }
}
