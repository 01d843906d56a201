import { Agent } from 'undici';
import type { SystemUnderTest } from '../system/system-under-test';

type TlsSource = Pick<SystemUnderTest, 'servingCa' | 'servernameOf'>;

/**
 * How a client checks the router's certificate at `url`: the serving CA, and the name the
 * certificate holds where the URL's host is an address it does not (an installed Service's
 * cluster IP); undefined where the host itself is named (127.0.0.1 locally).
 */
export function routerTls(sys: TlsSource, url: string): { ca: string; servername: string | undefined } {
  return { ca: sys.servingCa, servername: sys.servernameOf(url) };
}

/** An undici dispatcher for the router at `url` that checks its certificate. */
export function routerAgent(sys: TlsSource, url: string): Agent {
  const { ca, servername } = routerTls(sys, url);
  return new Agent({ connect: { ca, ...(servername !== undefined ? { servername } : {}) } });
}

/**
 * The router as a client that resolves names itself reaches it (agent-sandbox's Python client):
 * the URL with the certificate's name as its host, and, in ROUTER_ADDRESS, the address that name
 * stands for, as cluster DNS would answer it; ROUTER_CA names the CA file the client trusts.
 */
export function routerForPython(sys: TlsSource, url: string, caFile: string): { url: string; env: Record<string, string> } {
  const u = new URL(url);
  const servername = sys.servernameOf(url);
  if (servername === undefined) return { url, env: { ROUTER_CA: caFile } };
  const address = u.hostname;
  u.hostname = servername;
  return { url: u.toString().replace(/\/$/, ''), env: { ROUTER_CA: caFile, ROUTER_ADDRESS: address } };
}
