import { bindAddressFlag, booleanFlag, parseBindAddress } from '@sandbox-scale/kube-runtime';
import { z } from 'zod';

/** The e2b listener's flags, spread into sandbox-apiserver's schema. */
export const e2bFlagShape = {
  e2bBindAddress: bindAddressFlag('0').describe(
    "Where e2b's API listens (host:port or :port; 0 = off): e2b's control-plane REST API and envd on one address, so e2b's SDKs work with E2B_API_URL and E2B_SANDBOX_URL both set to it and a Kubernetes token as E2B_API_KEY",
  ),
  e2bTls: booleanFlag(true).describe(
    "Serve e2b's API over HTTPS with the serving certificate (--tls-cert-file, which must name its address too), since every request carries a Kubernetes token; false = plain HTTP (a loopback address, say)",
  ),
  e2bDefaultNamespace: z
    .string()
    .default('')
    .describe(
      "The namespace of e2b sandboxes of a caller that is not a ServiceAccount (a ServiceAccount's live in its own namespace); empty: such callers are refused",
    ),
};

type E2bFlags = { [K in keyof typeof e2bFlagShape]: z.infer<(typeof e2bFlagShape)[K]> };

export interface E2bOptions {
  readonly host: string;
  readonly port: number;
  readonly tls: boolean;
  readonly defaultNamespace?: string;
}

/** `{ e2b }` when --e2b-bind-address names one, else nothing: the listener is off. */
export function e2bConfigOf(flags: E2bFlags): { e2b?: E2bOptions } {
  const addr = parseBindAddress(flags.e2bBindAddress);
  if (addr === undefined) return {};
  return {
    e2b: {
      host: addr.host,
      port: addr.port,
      tls: flags.e2bTls,
      ...(flags.e2bDefaultNamespace !== '' ? { defaultNamespace: flags.e2bDefaultNamespace } : {}),
    },
  };
}
