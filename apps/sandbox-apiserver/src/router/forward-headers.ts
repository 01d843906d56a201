import { ROUTING_HEADER_PREFIX } from './routing-headers';

/** A header list as Node reads and writes it raw: name, value, name, value… (duplicates and case kept). */
export type RawHeaders = readonly string[];

/** Headers of one connection, never of the message (RFC 9110 §7.6.1), plus the proxy ones. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/**
 * Request headers that stop at the router: Host (the guest port is on its own loopback, so Host
 * names it there), Authorization (the caller's Kubernetes token is the router's to check, never the
 * guest's to see) and Expect (the router's own server has answered a 100-continue already).
 */
const REQUEST_ONLY_HERE = new Set(['host', 'authorization', 'expect']);

/** Header names the Connection header lists: they are hop-by-hop for this one message. */
function connectionTokens(raw: RawHeaders): Set<string> {
  const tokens = new Set<string>();
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if ((raw[i] ?? '').toLowerCase() !== 'connection') continue;
    for (const t of (raw[i + 1] ?? '').split(',')) if (t.trim() !== '') tokens.add(t.trim().toLowerCase());
  }
  return tokens;
}

function kept(raw: RawHeaders, drop: (name: string) => boolean): string[] {
  const named = connectionTokens(raw);
  const out: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] ?? '';
    const lower = name.toLowerCase();
    if (HOP_BY_HOP.has(lower) || named.has(lower) || drop(lower)) continue;
    out.push(name, raw[i + 1] ?? '');
  }
  return out;
}

function valueOf(raw: RawHeaders, name: string): string | undefined {
  for (let i = 0; i + 1 < raw.length; i += 2) if ((raw[i] ?? '').toLowerCase() === name) return raw[i + 1];
  return undefined;
}

/**
 * The headers a request is sent on to the guest with. Stripped, as agent-sandbox's router strips
 * them: the routing headers, hop-by-hop headers, Host and Authorization (and Expect); Host is then
 * set to the guest's loopback address and port; `dropped` (lower case) names more that stop here. A body framed by chunks stays chunked; an upgrade request (`isUpgrade`,
 * as the server's parser decided) keeps its Upgrade.
 */
export function forwardedRequestHeaders(raw: RawHeaders, port: number, isUpgrade: boolean, dropped?: ReadonlySet<string>): string[] {
  const out = kept(raw, (name) => name.startsWith(ROUTING_HEADER_PREFIX) || REQUEST_ONLY_HERE.has(name) || dropped?.has(name) === true);
  out.push('Host', `127.0.0.1:${port}`);
  const upgrade = valueOf(raw, 'upgrade');
  if (isUpgrade && upgrade !== undefined) out.push('Connection', 'Upgrade', 'Upgrade', upgrade);
  else if (valueOf(raw, 'transfer-encoding') !== undefined) out.push('Transfer-Encoding', 'chunked');
  return out;
}

/** The guest's response headers as the caller gets them: the hop-by-hop ones are this router's own connection's to set. */
export function forwardedResponseHeaders(raw: RawHeaders): string[] {
  return kept(raw, () => false);
}

/** The guest's 101 headers for the caller: its own, with the Upgrade and Connection that make it one. */
export function forwardedUpgradeHeaders(raw: RawHeaders): string[] {
  const out = kept(raw, () => false);
  const upgrade = valueOf(raw, 'upgrade');
  return upgrade === undefined ? out : [...out, 'Connection', 'Upgrade', 'Upgrade', upgrade];
}
