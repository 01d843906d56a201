// Set-up the serveWatch tests share: a cache-only SandboxesREST and an HTTP server that answers
// every request with a watch over it.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger } from '@sandbox-scale/kube-runtime';
import { parseListQuery } from '../http/list-query';
import { SandboxesREST } from '../storage/sandboxes-rest';
import { serveWatch, type WatchOptions } from './watch-stream';

/** Sandboxes with no node clients: watches only read the cache, so no node is ever called. */
export function cacheOnlySandboxes(o: { readonly watchHistory: number; readonly graceMs: number }): SandboxesREST {
  return new SandboxesREST({
    clients: undefined,
    graceMs: o.graceMs,
    overlayTtlMs: 300_000,
    claimIndexMaxBytes: 1 << 20,
    watchHistory: o.watchHistory,
    rng: Math.random,
    log: createLogger({ name: 'test', level: 'silent' }),
  });
}

export interface WatchServer {
  readonly server: Server;
  readonly port: number;
  /** Ends every connection and the listener. */
  close(): Promise<void>;
}

/**
 * A server on 127.0.0.1 serving a watch of `sandboxes` in `namespace` ('' for all) for every
 * request, with the request's query; `onResponse` sees each server-side response.
 */
export async function startWatchServer(
  sandboxes: SandboxesREST,
  namespace: string,
  onResponse: (res: ServerResponse) => void = () => undefined,
  encoding: Partial<Pick<WatchOptions, 'transform' | 'sharedEncoding'>> = {},
): Promise<WatchServer> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    onResponse(res);
    serveWatch(req, res, sandboxes, parseListQuery(namespace, url.searchParams), {
      params: url.searchParams,
      transform: (s) => s,
      ...encoding,
      bookmarkIntervalMs: 60_000,
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
