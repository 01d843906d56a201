import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { guardRequests, limitServer, requestUrl } from '../http/guarded-server';
import type { Logger } from '../log/logger';
import type { BindAddress } from './bind-address';
import { type Check, CheckSet, renderChecks } from './checks';

export interface ProbeServerOptions {
  log: Logger;
  /** Served on /metrics when given. */
  registry?: Registry;
  /** Shared check sets, so two listeners (metrics and probe addresses) answer alike. */
  healthz?: CheckSet;
  readyz?: CheckSet;
}

/**
 * The one HTTP endpoint of a component: /healthz (alive: restart me if failing), /readyz
 * (route to me / I am synced; names every failing check), /metrics (prom-client).
 */
export class ProbeServer {
  readonly healthz: CheckSet;
  readonly readyz: CheckSet;
  private server: Server | undefined;

  constructor(private readonly opts: ProbeServerOptions) {
    this.healthz = opts.healthz ?? new CheckSet();
    this.readyz = opts.readyz ?? new CheckSet();
  }

  /** Another listener answering from the same checks and registry. */
  sibling(): ProbeServer {
    return new ProbeServer({ ...this.opts, healthz: this.healthz, readyz: this.readyz });
  }

  addHealthzCheck(name: string, check: Check): void {
    this.healthz.add(name, check);
  }

  addReadyzCheck(name: string, check: Check): void {
    this.readyz.add(name, check);
  }

  async listen(addr: BindAddress): Promise<BindAddress> {
    const server = createServer(guardRequests((req, res) => this.handle(req, res), { log: this.opts.log }));
    // probes and scrapes only: a few connections at a time
    limitServer(server, { requestTimeoutMs: 10_000, headersTimeoutMs: 10_000, keepAliveTimeoutMs: 5_000, maxConnections: 256 });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(addr.port, addr.host === '' ? undefined : addr.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const a = server.address() as AddressInfo;
    this.opts.log.info({ address: `${a.address}:${a.port}` }, 'probe and metrics server listening');
    return { host: a.address, port: a.port };
  }

  async close(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = requestUrl(req.url, 'http://probe');
    if (url === undefined) return send(res, 400, 'malformed request target\n');
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, 'method not allowed\n');
    const verbose = url.searchParams.has('verbose');
    switch (url.pathname) {
      case '/healthz':
      case '/livez': {
        const r = renderChecks(url.pathname.slice(1), await this.healthz.run(), verbose);
        return send(res, r.status, r.body);
      }
      case '/readyz': {
        const r = renderChecks('readyz', await this.readyz.run(), verbose);
        return send(res, r.status, r.body);
      }
      case '/metrics': {
        if (!this.opts.registry) return send(res, 404, 'no metrics registry\n');
        return send(res, 200, await this.opts.registry.metrics(), this.opts.registry.contentType);
      }
      default:
        return send(res, 404, 'not found\n');
    }
  }
}

function send(res: ServerResponse, status: number, body: string, contentType = 'text/plain; charset=utf-8'): void {
  res.writeHead(status, { 'content-type': contentType, 'x-content-type-options': 'nosniff' });
  res.end(body);
}
