import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import {
  closeServer,
  fixedPair,
  guardRequests,
  limitServer,
  selfSignedCert,
  sendKubeStatus,
  serveWatched,
  watchServingFiles,
  type Logger,
  type ServingPair,
} from '@sandbox-scale/kube-runtime';
import { statusForError } from '@sandbox-scale/scale-core';
import { handleClaim, type ClaimHandlerDeps } from './claim-handler';

export interface FastPathServerOptions {
  host: string;
  port: number;
  /** Serving certificate files; both empty: a self-signed one for localhost is generated. */
  certFile: string;
  keyFile: string;
  deps: ClaimHandlerDeps;
  log: Logger;
  /** Connections held open at once; default DEFAULT_SERVER_LIMITS.maxConnections. */
  maxConnections?: number;
}

/** The certificate files, read again whenever they change (a renewed Secret); else one made now for localhost. */
async function servingCert(o: FastPathServerOptions): Promise<ServingPair> {
  if (o.certFile && o.keyFile) return watchServingFiles(o.certFile, o.keyFile, o.log);
  const { cert, key } = await selfSignedCert({ commonName: 'localhost', dnsNames: ['localhost'], ips: ['127.0.0.1'] });
  return fixedPair(cert, key);
}

/** The HTTPS listener of the L2 fast path; returns its base URL and a close function. */
export async function startFastPathServer(o: FastPathServerOptions): Promise<{ url: string; server: Server; close: () => Promise<void> }> {
  const tls = await servingCert(o);
  const server = createServer(
    // an answer is one small write: sent at once, never held back by Nagle for the client's
    // delayed ACK (tens of milliseconds). Node's default today, stated so it cannot drift.
    { ...tls.current, noDelay: true },
    guardRequests((req, res) => handleClaim(req, res, o.deps), {
      log: o.log,
      fail: (res, err) => sendKubeStatus(res, statusForError(err)),
    }),
  );
  serveWatched(server, tls);
  limitServer(server, {
    headersTimeoutMs: 10_000,
    requestTimeoutMs: 30_000,
    ...(o.maxConnections !== undefined ? { maxConnections: o.maxConnections } : {}),
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const host = o.host.includes(':') ? `[${o.host}]` : o.host;
  o.log.info({ port }, 'fast path listening');
  return {
    url: `https://${host}:${port}`,
    server,
    close: () => {
      tls.close();
      return closeServer(server);
    },
  };
}
