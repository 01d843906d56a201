import type { IncomingHttpHeaders } from 'node:http';
import type { X509Certificate } from 'node:crypto';
import type { AuthenticationConfig } from './auth-config';
import { subjectOf, verifiedBy } from './client-cert';
import type { UserInfo } from './user-info';

function values(headers: IncomingHttpHeaders, name: string): string[] {
  const v = headers[name.toLowerCase()];
  if (v === undefined) return [];
  return (Array.isArray(v) ? v : [v]).flatMap((s) => s.split(',')).map((s) => s.trim()).filter((s) => s !== '');
}

/**
 * Front-proxy authentication (k8s-api.md §4.4 step 1): the peer certificate chains to the
 * requestheader CA and carries an allowed name; identity comes from the X-Remote-* headers.
 * Undefined when the certificate does not qualify or no username header is set.
 */
export function authenticateRequestHeader(cert: X509Certificate | undefined, headers: IncomingHttpHeaders, cfg: AuthenticationConfig, cas: readonly X509Certificate[]): UserInfo | undefined {
  if (cert === undefined || cas.length === 0 || !verifiedBy(cert, cas)) return undefined;
  if (cfg.allowedNames.length > 0 && !cfg.allowedNames.includes(subjectOf(cert).commonName)) return undefined;
  const username = cfg.usernameHeaders.map((h) => values(headers, h)[0]).find((v) => v !== undefined && v !== '');
  if (username === undefined) return undefined;
  const groups = cfg.groupHeaders.flatMap((h) => values(headers, h));
  const uid = cfg.uidHeaders.map((h) => values(headers, h)[0]).find((v) => v !== undefined && v !== '');
  const extra: Record<string, string[]> = {};
  for (const [name, raw] of Object.entries(headers)) {
    const prefix = cfg.extraHeaderPrefixes.find((p) => name.startsWith(p.toLowerCase()));
    if (prefix === undefined || raw === undefined) continue;
    const key = decodeURIComponent(name.slice(prefix.length).toLowerCase());
    extra[key] = [...(extra[key] ?? []), ...(Array.isArray(raw) ? raw : [raw])];
  }
  return { username, ...(uid ? { uid } : {}), groups, extra };
}

/** Whether any header could be mistaken for a front-proxy identity. */
export function stripRemoteHeaders(headers: IncomingHttpHeaders, cfg: AuthenticationConfig): void {
  const prefixes = [...cfg.usernameHeaders, ...cfg.groupHeaders, ...cfg.uidHeaders, ...cfg.extraHeaderPrefixes].map((h) => h.toLowerCase());
  for (const name of Object.keys(headers)) {
    if (prefixes.some((p) => name === p || name.startsWith(p))) delete headers[name];
  }
}
