import { generateKeyPairSync } from 'node:crypto';
import { generate } from 'selfsigned';

/** PEM pair; `cert` may be a CA or a leaf. */
export interface CertPair {
  cert: string;
  key: string;
}

export interface LeafOptions {
  commonName: string;
  organizations?: string[];
  dnsNames?: string[];
  ips?: string[];
  server?: boolean;
  client?: boolean;
  validDays?: number;
}

const DAY_MS = 86_400_000;

function validity(days: number): { notBeforeDate: Date; notAfterDate: Date } {
  // a minute of slack so a freshly minted cert is valid on a clock that is a little behind
  const notBeforeDate = new Date(Date.now() - 60_000);
  return { notBeforeDate, notAfterDate: new Date(notBeforeDate.getTime() + days * DAY_MS) };
}

/** A self-signed certificate authority. */
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
export async function createLeaf(ca: CertPair, opts: LeafOptions): Promise<CertPair> {
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
      { name: 'extKeyUsage', serverAuth: opts.server ?? false, clientAuth: opts.client ?? false },
      ...(altNames.length ? [{ name: 'subjectAltName' as const, altNames }] : []),
    ],
  });
  return { cert: r.cert, key: r.private };
}

/** An RSA key pair for signing service-account tokens. */
export function createSigningKey(): { publicKey: string; privateKey: string } {
  return generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
}
