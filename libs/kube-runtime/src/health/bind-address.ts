import { SandboxScaleError, findInCauseChain } from '@sandbox-scale/scale-core';

export class BindAddressError extends SandboxScaleError {}

export function isBindAddressError(err: unknown): boolean {
  return findInCauseChain(err, 'BindAddressError') !== undefined;
}

export interface BindAddress {
  /** '' = every interface (IPv6 and IPv4 where available). */
  host: string;
  port: number;
}

/**
 * Kube component style: `:8080` (all interfaces), `127.0.0.1:8080`, `[::1]:8080`; `0` turns
 * the server off (undefined). Port 0 picks a free port (tests).
 */
export function parseBindAddress(addr: string): BindAddress | undefined {
  if (addr === '0' || addr === '') return undefined;
  const m = /^(?:\[([^\]]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(addr);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new BindAddressError(`bind address "${addr}" is not host:port, :port or 0`);
  const host = m[1] ?? m[2] ?? '';
  return { host, port };
}
