import { readFile } from 'node:fs/promises';
import { generate } from 'selfsigned';

export interface ServingCert {
  readonly cert: string;
  readonly key: string;
  /** The CA to put in the APIService caBundle (the cert itself when loaded from files). */
  readonly caBundle: string;
}

function validity(days: number): { notBeforeDate: Date; notAfterDate: Date } {
  const notBeforeDate = new Date(Date.now() - 60_000);
  return { notBeforeDate, notAfterDate: new Date(notBeforeDate.getTime() + days * 86_400_000) };
}

/**
 * A CA and a serving cert for `<service>.<namespace>.svc` (what the aggregator verifies,
 * k8s-api.md §4.3), `.svc.cluster.local`, localhost and 127.0.0.1. Used when no
 * --tls-cert-file is given: fine for development, a chart should mount a managed cert.
 */
export async function selfSignedServingCert(service: string, namespace: string): Promise<ServingCert> {
  const ca = await generate([{ name: 'commonName', value: `${service}-ca@${Math.floor(Date.now() / 1000)}` }], {
    algorithm: 'sha256',
    keySize: 2048,
    ...validity(365),
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    ],
  });
  const dns = [`${service}.${namespace}.svc`, `${service}.${namespace}.svc.cluster.local`, `${service}.${namespace}`, service, 'localhost'];
  const leaf = await generate([{ name: 'commonName', value: `${service}.${namespace}.svc` }], {
    algorithm: 'sha256',
    keySize: 2048,
    ...validity(365),
    ca: { cert: ca.cert, key: ca.private },
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [...dns.map((value) => ({ type: 2 as const, value })), { type: 7 as const, ip: '127.0.0.1' }] },
    ],
  });
  return { cert: leaf.cert, key: leaf.private, caBundle: ca.cert };
}

export async function loadServingCert(certFile: string, keyFile: string): Promise<ServingCert> {
  const [cert, key] = await Promise.all([readFile(certFile, 'utf8'), readFile(keyFile, 'utf8')]);
  return { cert, key, caBundle: cert };
}
