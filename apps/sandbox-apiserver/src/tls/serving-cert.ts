import { fixedPair, selfSignedCert, watchServingFiles, type Logger, type ServingPair } from '@sandbox-scale/kube-runtime';

/** What the replica serves, and `caBundle`, the CA to put in an APIService (the certificate itself when read from files). */
export interface ServingCert {
  pair: ServingPair;
  caBundle: string;
}

/**
 * A CA and a serving cert for `<service>.<namespace>.svc` (what the aggregator verifies),
 * `.svc.cluster.local`, localhost and 127.0.0.1. Used when no
 * --tls-cert-file is given: fine for development, a chart should mount a managed cert.
 */
async function selfSignedServingCert(service: string, namespace: string): Promise<ServingCert> {
  const dnsNames = [
    `${service}.${namespace}.svc`,
    `${service}.${namespace}.svc.cluster.local`,
    `${service}.${namespace}`,
    service,
    'localhost',
  ];
  const made = await selfSignedCert({ commonName: `${service}.${namespace}.svc`, dnsNames, ips: ['127.0.0.1'] });
  return { pair: fixedPair(made.cert, made.key), caBundle: made.caBundle };
}

/** --tls-cert-file and --tls-private-key-file, read again whenever they change; else a self-signed certificate. */
export async function servingCertOf(
  o: { tlsCertFile?: string; tlsPrivateKeyFile?: string; serviceName?: string; serviceNamespace?: string },
  log: Logger,
): Promise<ServingCert> {
  if (!o.tlsCertFile || !o.tlsPrivateKeyFile)
    return selfSignedServingCert(o.serviceName ?? 'sandbox-apiserver', o.serviceNamespace ?? 'sandbox-system');
  const pair = await watchServingFiles(o.tlsCertFile, o.tlsPrivateKeyFile, log);
  return { pair, caBundle: pair.current.cert };
}
