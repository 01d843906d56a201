import { readFile } from 'node:fs/promises';
import { selfSignedCert, type SelfSignedCert } from '@sandbox-scale/kube-runtime';

/** `caBundle` is the CA to put in the APIService (the cert itself when loaded from files). */
export type ServingCert = SelfSignedCert;

/**
 * A CA and a serving cert for `<service>.<namespace>.svc` (what the aggregator verifies),
 * `.svc.cluster.local`, localhost and 127.0.0.1. Used when no
 * --tls-cert-file is given: fine for development, a chart should mount a managed cert.
 */
export function selfSignedServingCert(service: string, namespace: string): Promise<ServingCert> {
  const dnsNames = [
    `${service}.${namespace}.svc`,
    `${service}.${namespace}.svc.cluster.local`,
    `${service}.${namespace}`,
    service,
    'localhost',
  ];
  return selfSignedCert({ commonName: `${service}.${namespace}.svc`, dnsNames, ips: ['127.0.0.1'] });
}

export async function loadServingCert(certFile: string, keyFile: string): Promise<ServingCert> {
  const [cert, key] = await Promise.all([readFile(certFile, 'utf8'), readFile(keyFile, 'utf8')]);
  return { cert, key, caBundle: cert };
}
