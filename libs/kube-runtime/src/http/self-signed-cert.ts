import { createCA, signLeaf } from '../certs/pki';

export interface SelfSignedCert {
  readonly cert: string;
  readonly key: string;
  /** The CA that signed `cert`, for whoever must trust it (an APIService caBundle). */
  readonly caBundle: string;
}

export interface SelfSignedCertOptions {
  readonly commonName: string;
  readonly dnsNames: readonly string[];
  readonly ips?: readonly string[];
  readonly validDays?: number;
}

/**
 * A throwaway CA and a serving certificate it signed for `dnsNames` and `ips`: what a server
 * listens with when no certificate files are given. Fine for development and tests; a chart
 * mounts a managed certificate.
 */
export async function selfSignedCert(o: SelfSignedCertOptions): Promise<SelfSignedCert> {
  const days = o.validDays ?? 365;
  const ca = await createCA(`${o.commonName}-ca@${Math.floor(Date.now() / 1000)}`, days);
  const leaf = await signLeaf(ca, { commonName: o.commonName, dnsNames: o.dnsNames, ips: o.ips ?? [], validDays: days });
  return { cert: leaf.cert, key: leaf.key, caBundle: ca.cert };
}
