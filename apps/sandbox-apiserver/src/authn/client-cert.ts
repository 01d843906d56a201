import { X509Certificate } from 'node:crypto';
import type { TLSSocket } from 'node:tls';

/** Splits a PEM bundle into certificates. */
export function parseCaBundle(pem: string | undefined): X509Certificate[] {
  if (pem === undefined) return [];
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  return blocks.map((b) => new X509Certificate(b));
}

/** The peer's leaf certificate, if it presented one. */
export function peerCertificate(socket: TLSSocket): X509Certificate | undefined {
  const peer = socket.getPeerCertificate?.(false);
  if (peer === undefined || peer === null || !('raw' in peer) || peer.raw === undefined) return undefined;
  return new X509Certificate(peer.raw);
}

const CLIENT_AUTH_OID = '1.3.6.1.5.5.7.3.2';

/**
 * Whether `cert` was issued by one of `cas`, is time-valid and allows client auth. Chains are
 * one level deep here: kube's front-proxy and client CAs sign their leaves directly.
 */
export function verifiedBy(cert: X509Certificate, cas: readonly X509Certificate[], now = new Date()): boolean {
  if (now < new Date(cert.validFrom) || now > new Date(cert.validTo)) return false;
  const eku = cert.keyUsage;
  if (eku !== undefined && eku.length > 0 && !eku.includes(CLIENT_AUTH_OID)) return false;
  return cas.some((ca) => cert.checkIssued(ca) && cert.verify(ca.publicKey));
}

/** CN and O values of a certificate subject. */
export function subjectOf(cert: X509Certificate): { commonName: string; organizations: string[] } {
  const lines = cert.subject.split('\n');
  const commonName = lines.find((l) => l.startsWith('CN='))?.slice(3) ?? '';
  const organizations = lines.filter((l) => l.startsWith('O=')).map((l) => l.slice(2));
  return { commonName, organizations };
}
