import { X509Certificate } from 'node:crypto';
import { selfSignedCert } from './self-signed-cert';

describe('selfSignedCert', () => {
  it('serves the names and addresses asked for, signed by the CA it hands back', async () => {
    const c = await selfSignedCert({ commonName: 'svc.ns.svc', dnsNames: ['svc.ns.svc', 'localhost'], ips: ['127.0.0.1'] });
    const leaf = new X509Certificate(c.cert);
    const ca = new X509Certificate(c.caBundle);
    expect(leaf.checkHost('svc.ns.svc')).toBe('svc.ns.svc');
    expect(leaf.checkHost('localhost')).toBe('localhost');
    expect(leaf.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(leaf.checkHost('other.example')).toBeUndefined();
    expect(leaf.verify(ca.publicKey)).toBe(true);
    expect(leaf.ca).toBe(false);
    expect(ca.ca).toBe(true);
    expect(c.key).toContain('PRIVATE KEY');
  });
});
