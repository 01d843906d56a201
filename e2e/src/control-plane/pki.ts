import { generateKeyPairSync } from 'node:crypto';
import { signLeaf, type CertPair, type LeafOptions } from '@sandbox-scale/kube-runtime';

export type { CertPair, LeafOptions } from '@sandbox-scale/kube-runtime';
export { createCA } from '@sandbox-scale/kube-runtime';

/** A certificate signed by `ca`; serverAuth and clientAuth only where asked for. */
export function createLeaf(ca: CertPair, opts: LeafOptions): Promise<CertPair> {
  return signLeaf(ca, { ...opts, server: opts.server ?? false });
}

/** An RSA key pair for signing service-account tokens. */
export function createSigningKey(): { publicKey: string; privateKey: string } {
  return generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
}
