import { isIPv4, isIPv6 } from 'node:net';
import { bindAddressFlag, booleanFlag, ConfigError, durationFlag, parseBindAddress } from '@sandbox-scale/kube-runtime';
import { z } from 'zod';
import { ROUTER_AUTHENTICATION_MODES, type RouterAuthentication } from './router-auth';
import { DEFAULT_MAX_RELAYS, DEFAULT_MAX_RELAYS_PER_NAMESPACE } from './router-server';

/** The router's flags, spread into sandbox-apiserver's schema. */
export const routerFlagShape = {
  routerBindAddress: bindAddressFlag('0').describe(
    "Where the sandbox router listens (host:port or :port; 0 = off): agent-sandbox's sandbox-router for microVMs, routing each request by its X-Sandbox-ID, X-Sandbox-Namespace and X-Sandbox-Port headers to that Sandbox's guest port through its node",
  ),
  routerAuthentication: z
    .enum(ROUTER_AUTHENTICATION_MODES)
    .default('kubernetes')
    .describe(
      'Who may use the router. kubernetes: a bearer token the API server authenticates (TokenReview) and allows create on sandboxes/portforward of the Sandbox in its namespace (SubjectAccessReview), else 401 or 403. none: anyone who reaches the port reaches the guest ports of every served sandbox (behind a tunnel that authenticates on its own only)',
    ),
  routerTunnelBindAddress: z
    .string()
    .refine((v) => v === '0' || isLoopbackBindAddress(v), { message: 'must be a loopback address, 127.0.0.1:port or [::1]:port, or 0' })
    .default('0')
    .describe(
      "A second router listener, plain HTTP and without authentication, on a loopback address only (0 = off): where `kubectl port-forward` to the pod arrives, since the container runtime dials localhost inside the pod, so the tunnel's own authorization (create pods/portforward) is the only check. It serves agent-sandbox's LocalTunnel mode, which sends no bearer token; --router-bind-address then names the pod's address on the same port",
    ),
  routerTls: booleanFlag(true).describe(
    "Serve the router over HTTPS with the serving certificate (--tls-cert-file, which must name the router's address too), since every request carries a full Kubernetes bearer token; false = plain HTTP, as upstream's (the tunnel listener is plain HTTP either way: it is on the pod's loopback)",
  ),
  routerProxyTimeout: durationFlag('180s').describe(
    "Longest a relayed request waits for the guest's answer (and then between reads of its body); the default and the cap of X-Sandbox-Timeout",
  ),
  routerMaxRelays: z.coerce
    .number()
    .int()
    .min(1)
    .default(DEFAULT_MAX_RELAYS)
    .describe('Requests the router relays at once (open upgrades included); more are answered 503'),
  routerMaxRelaysPerNamespace: z.coerce
    .number()
    .int()
    .min(1)
    .default(DEFAULT_MAX_RELAYS_PER_NAMESPACE)
    .describe(
      "Requests the router relays at once to one namespace's sandboxes, all callers together (a tenant's ServiceAccounts share it); more are answered 429. A slot is taken only once the caller is authenticated and allowed",
    ),
  routerRelayIdleTimeout: durationFlag('30m').describe(
    'An upgraded relay (a WebSocket, say) with no byte either way for this long is closed',
  ),
  routerRelayMaxDuration: durationFlag('4h').describe('An upgraded relay is closed after this long, however busy'),
};

type RouterFlags = { [K in keyof typeof routerFlagShape]: z.infer<(typeof routerFlagShape)[K]> };

/** The router as sandbox-apiserver starts it, from its flags. */
export interface RouterOptions {
  /** '' = every interface; 0 picks a free port. */
  readonly host: string;
  readonly port: number;
  readonly authentication: RouterAuthentication;
  /** The unauthenticated listener for `kubectl port-forward`, on a loopback address; absent = off. */
  readonly tunnel?: { readonly host: string; readonly port: number };
  readonly tls: boolean;
  readonly proxyTimeoutMs: number;
  readonly maxRelays: number;
  readonly maxRelaysPerNamespace: number;
  readonly relayIdleTimeoutMs: number;
  readonly relayMaxDurationMs: number;
}

/** 127.0.0.0/8 or ::1, as IP literals (a name such as localhost may resolve elsewhere): only the pod's own network namespace reaches them. */
export function isLoopback(host: string): boolean {
  if (isIPv4(host)) return host.startsWith('127.');
  return isIPv6(host) && new URL(`http://[${host}]`).hostname === '[::1]';
}

function isLoopbackBindAddress(v: string): boolean {
  try {
    return isLoopback(parseBindAddress(v)?.host ?? '');
  } catch {
    return false;
  }
}

/** Every interface of its family, the loopback included: a listener there takes the port from a loopback one. */
const isWildcard = (host: string): boolean => host === '' || host === '0.0.0.0' || host === '::';

/**
 * `{ router }` when --router-bind-address names one, else nothing: the router is off. A
 * ConfigError (exit 2) for a tunnel listener without the router, or one whose port the router's
 * listener already holds on every interface.
 */
export function routerConfigOf(flags: RouterFlags): { router?: RouterOptions } {
  const addr = parseBindAddress(flags.routerBindAddress);
  const tunnel = parseBindAddress(flags.routerTunnelBindAddress);
  if (addr === undefined) {
    if (tunnel !== undefined)
      throw new ConfigError(
        '--router-tunnel-bind-address needs --router-bind-address: the tunnel is a second listener of the router',
        '--router-tunnel-bind-address',
      );
    return {};
  }
  if (tunnel !== undefined && tunnel.port !== 0 && tunnel.port === addr.port && isWildcard(addr.host))
    throw new ConfigError(
      `--router-tunnel-bind-address ${flags.routerTunnelBindAddress} shares its port with --router-bind-address ${flags.routerBindAddress}, which listens on every interface, the loopback included: bind the router to the pod's own address instead (--router-bind-address=[$(POD_IP)]:${addr.port})`,
      '--router-tunnel-bind-address',
    );
  return {
    router: {
      host: addr.host,
      port: addr.port,
      authentication: flags.routerAuthentication,
      ...(tunnel !== undefined ? { tunnel: { host: tunnel.host, port: tunnel.port } } : {}),
      tls: flags.routerTls,
      proxyTimeoutMs: flags.routerProxyTimeout,
      maxRelays: flags.routerMaxRelays,
      maxRelaysPerNamespace: flags.routerMaxRelaysPerNamespace,
      relayIdleTimeoutMs: flags.routerRelayIdleTimeout,
      relayMaxDurationMs: flags.routerRelayMaxDuration,
    },
  };
}
