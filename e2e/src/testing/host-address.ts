import { networkInterfaces } from 'node:os';

/**
 * This machine's first non-loopback IPv4 address, skipping the bridges and veths a local node
 * adds: what an EndpointSlice may list (it refuses loopback) and what pods route to.
 */
export function hostAddress(): string | undefined {
  for (const [name, addrs] of Object.entries(networkInterfaces())) {
    if (name === 'lo' || name.startsWith('ssn') || name.startsWith('cni') || name.startsWith('veth')) continue;
    const v4 = addrs?.find((a) => a.family === 'IPv4' && !a.internal);
    if (v4) return v4.address;
  }
  return undefined;
}

/** hostAddress, or an error that says why an EndpointSlice cannot list this machine. */
export function requireHostAddress(): string {
  const a = hostAddress();
  if (a === undefined) throw new Error('an EndpointSlice needs a non-loopback IPv4 address and this machine has none');
  return a;
}
