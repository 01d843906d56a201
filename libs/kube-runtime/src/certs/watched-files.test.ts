import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { Agent, createServer, request, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { captureLog } from '../testing/capture-log';
import { createCA, signLeaf, type CertPair } from './pki';
import { serveWatched, watchServingFiles, type WatchedFiles } from './watched-files';

// A Secret volume as the kubelet writes it: the files are links into `..data`, itself a link to a
// timestamped directory that a renewal replaces in one rename.
function secretVolume(dir: string): { write: (files: Record<string, string>) => void } {
  let n = 0;
  return {
    write(files) {
      const version = `..v${++n}`;
      mkdirSync(join(dir, version));
      for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, version, name), text);
      symlinkSync(version, join(dir, '..data_tmp'));
      renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
      for (const name of Object.keys(files)) {
        try {
          symlinkSync(join('..data', name), join(dir, name));
        } catch {
          // the link exists from the first version and follows ..data
        }
      }
    },
  };
}

/** GET / over `agent`: the status and the fingerprint of the certificate the server presented. */
function get(url: string, ca: string, agent?: Agent): Promise<{ status: number; fingerprint: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/`, { ca, servername: 'localhost', ...(agent ? { agent } : { agent: false }) }, (res) => {
      const fingerprint = (res.socket as TLSSocket).getPeerCertificate().fingerprint256;
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, fingerprint }));
    });
    req.on('error', reject);
    req.end();
  });
}

const fingerprintOf = async (pair: CertPair): Promise<string> => {
  const { X509Certificate } = await import('node:crypto');
  return new X509Certificate(pair.cert).fingerprint256;
};

describe('a server reading its certificate files again', () => {
  let dir: string;
  let files: WatchedFiles<'cert' | 'key'>;
  let server: Server;
  let url: string;
  let ca1: CertPair;
  let leaf1: CertPair;
  let vol: ReturnType<typeof secretVolume>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'watched-files-'));
    vol = secretVolume(dir);
    ca1 = await createCA('first', 1);
    leaf1 = await signLeaf(ca1, { commonName: 'localhost', dnsNames: ['localhost'], validDays: 1 });
    vol.write({ 'tls.crt': leaf1.cert, 'tls.key': leaf1.key });
    files = await watchServingFiles(join(dir, 'tls.crt'), join(dir, 'tls.key'), captureLog().log, 3_600_000);
    server = createServer({ ...files.current, keepAliveTimeout: 60_000 }, (_req, res) => res.end('ok'));
    serveWatched(server, files);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    files.close();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves a renewed certificate to new connections, keeps open ones going, and skips a half-written set', async () => {
    const keepAlive = new Agent({ keepAlive: true, maxSockets: 1 });
    expect(await get(url, ca1.cert, keepAlive)).toEqual({ status: 200, fingerprint: await fingerprintOf(leaf1) });

    // a certificate without its key (a volume that is not a Secret's, caught mid-write): not taken
    const ca2 = await createCA('second', 1);
    const leaf2 = await signLeaf(ca2, { commonName: 'localhost', dnsNames: ['localhost'], validDays: 1 });
    vol.write({ 'tls.crt': leaf2.cert, 'tls.key': leaf1.key });
    expect(await files.check()).toBe(false);
    expect(await get(url, ca1.cert)).toEqual({ status: 200, fingerprint: await fingerprintOf(leaf1) });

    // the whole pair swapped at once, signed by another CA
    vol.write({ 'tls.crt': leaf2.cert, 'tls.key': leaf2.key });
    expect(await files.check()).toBe(true);
    expect(await files.check()).toBe(false);
    expect(await get(url, ca2.cert)).toEqual({ status: 200, fingerprint: await fingerprintOf(leaf2) });
    await expect(get(url, ca1.cert)).rejects.toThrow();
    // the connection opened before goes on with the certificate it began with
    expect(await get(url, ca1.cert, keepAlive)).toEqual({ status: 200, fingerprint: await fingerprintOf(leaf1) });
    keepAlive.destroy();

    // the files gone for a moment: the current pair stays
    rmSync(join(dir, '..data'));
    expect(await files.check()).toBe(false);
    expect(await get(url, ca2.cert)).toEqual({ status: 200, fingerprint: await fingerprintOf(leaf2) });
  });

  it('refuses to start from files that do not make a pair', async () => {
    const other = mkdtempSync(join(tmpdir(), 'watched-files-bad-'));
    try {
      const ca = await createCA('x', 1);
      const a = await signLeaf(ca, { commonName: 'a', dnsNames: ['a'], validDays: 1 });
      const b = await signLeaf(ca, { commonName: 'b', dnsNames: ['b'], validDays: 1 });
      writeFileSync(join(other, 'tls.crt'), a.cert);
      writeFileSync(join(other, 'tls.key'), b.key);
      await expect(watchServingFiles(join(other, 'tls.crt'), join(other, 'tls.key'), captureLog().log)).rejects.toThrow(/usable set/);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });
});
