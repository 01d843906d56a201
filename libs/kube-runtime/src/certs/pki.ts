import { X509Certificate } from 'node:crypto';
import { generate } from 'selfsigned';

/** A certificate and its private key, PEM. `cert` may be a CA or a leaf. */
export interface CertPair {
  cert: string;
  key: string;
}

export interface LeafOptions {
  commonName: string;
  organizations?: readonly string[];
  dnsNames?: readonly string[];
  ips?: readonly string[];
  /** serverAuth (default true). */
  server?: boolean;
  /** clientAuth (default false). */
  client?: boolean;
  validDays?: number;
}

const DAY_MS = 86_400_000;

function validity(days: number): { notBeforeDate: Date; notAfterDate: Date } {
  // a minute back, so a peer whose clock runs a little behind already accepts it
  const notBeforeDate = new Date(Date.now() - 60_000);
  return { notBeforeDate, notAfterDate: new Date(notBeforeDate.getTime() + days * DAY_MS) };
}

/** A self-signed certificate authority (RSA 2048, SHA-256). */
export async function createCA(commonName: string, validDays = 365): Promise<CertPair> {
  const r = await generate([{ name: 'commonName', value: commonName }], {
    algorithm: 'sha256',
    keySize: 2048,
    ...validity(validDays),
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    ],
  });
  return { cert: r.cert, key: r.private };
}

/** A serving and/or client certificate signed by `ca`. */
export async function signLeaf(ca: CertPair, opts: LeafOptions): Promise<CertPair> {
  const attrs = [{ name: 'commonName', value: opts.commonName }];
  for (const o of opts.organizations ?? []) attrs.push({ name: 'organizationName', value: o });
  const altNames = [
    ...(opts.dnsNames ?? []).map((value) => ({ type: 2 as const, value })),
    ...(opts.ips ?? []).map((ip) => ({ type: 7 as const, ip })),
  ];
  const r = await generate(attrs, {
    algorithm: 'sha256',
    keySize: 2048,
    ...validity(opts.validDays ?? 365),
    ca,
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: opts.server ?? true, clientAuth: opts.client ?? false },
      ...(altNames.length ? [{ name: 'subjectAltName' as const, altNames }] : []),
    ],
  });
  return { cert: r.cert, key: r.private };
}

/** What a kept certificate is checked for: when it ends, the names it holds, and who signed it. */
export interface CertFacts {
  notAfterMs: number;
  dnsNames: string[];
  /** Whether `caPem`'s key signed it. */
  signedBy(caPem: string): boolean;
}

/** The facts of a PEM certificate (its first), or undefined when it does not parse. */
export function certFacts(pem: string): CertFacts | undefined {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(pem);
  } catch {
    return undefined;
  }
  const dnsNames = (cert.subjectAltName ?? '')
    .split(', ')
    .filter((n) => n.startsWith('DNS:'))
    .map((n) => n.slice(4));
  return {
    notAfterMs: Date.parse(cert.validTo),
    dnsNames,
    signedBy: (caPem) => {
      try {
        return cert.verify(new X509Certificate(caPem).publicKey);
      } catch {
        return false;
      }
    },
  };
}
