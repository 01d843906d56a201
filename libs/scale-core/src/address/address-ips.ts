/**
 * Splits `host:port` the way Go's net.SplitHostPort does, or returns undefined when the string
 * is not a host:port pair (no port, a bare IPv6 address, stray brackets).
 */
export function splitHostPort(addr: string): { host: string; port: string } | undefined {
  const lastColon = addr.lastIndexOf(':');
  if (lastColon < 0) return undefined;
  let host: string;
  let afterOpen = 0;
  let afterClose = 0;
  if (addr.startsWith('[')) {
    const close = addr.indexOf(']');
    // The first ']' must sit just before the last ':'.
    if (close < 0 || close + 1 !== lastColon) return undefined;
    host = addr.slice(1, close);
    afterOpen = 1;
    afterClose = close + 1;
  } else {
    host = addr.slice(0, lastColon);
    // More than one colon without brackets is a bare IPv6 address, not host:port.
    if (host.includes(':')) return undefined;
  }
  if (addr.slice(afterOpen).includes('[') || addr.slice(afterClose).includes(']')) return undefined;
  return { host, port: addr.slice(lastColon + 1) };
}

/**
 * `status.podIPs` of a sandbox from its `host:port` address: the host
 * without the port (IPv6 unbracketed), or the address verbatim when it has no port or an empty
 * host; undefined for an empty address, so the field is absent rather than `[]`.
 */
export function addressIPs(addr: string | undefined): string[] | undefined {
  if (addr === undefined || addr === '') return undefined;
  const split = splitHostPort(addr);
  if (split !== undefined && split.host !== '') return [split.host];
  return [addr];
}
