import { generate } from 'selfsigned';

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

function validity(days: number): { notBeforeDate: Date; notAfterDate: Date } {
  // a minute back, so a peer whose clock runs a little behind already accepts it
  const notBeforeDate = new Date(Date.now() - 60_000);
  return { notBeforeDate, notAfterDate: new Date(notBeforeDate.getTime() + days * 86_400_000) };
}

/**
 * A throwaway CA and a serving certificate it signed for `dnsNames` and `ips`: what a server
 * listens with when no certificate files are given. Fine for development and tests; a chart
 * mounts a managed certificate.
 */
export async function selfSignedCert(o: SelfSignedCertOptions): Promise<SelfSignedCert> {
  const days = o.validDays ?? 365;
  const ca = await generate([{ name: 'commonName', value: `${o.commonName}-ca@${Math.floor(Date.now() / 1000)}` }], {
    algorithm: 'sha256',
    keySize: 2048,
    ...validity(days),
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    ],
  });
  const leaf = await generate([{ name: 'commonName', value: o.commonName }], {
    algorithm: 'sha256',
    keySize: 2048,
    ...validity(days),
    ca: { cert: ca.cert, key: ca.private },
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [...o.dnsNames.map((value) => ({ type: 2 as const, value })), ...(o.ips ?? []).map((ip) => ({ type: 7 as const, ip }))],
      },
    ],
  });
  return { cert: leaf.cert, key: leaf.private, caBundle: ca.cert };
}
