import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { serveWatched, type ServingPair } from '../certs/watched-files';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { StatusError, statusForError } from '@sandbox-scale/scale-core';
import type { AccessAttributes, Decision, DelegatedAuth, UserInfo } from '../auth/delegated-auth';
import { closeServer, guardRequests, limitServer, requestUrl } from '../http/guarded-server';
import { sendKubeStatus } from '../http/json-reply';
import type { Logger } from '../log/logger';
import type { BindAddress } from './bind-address';
import { type Check, CheckSet, renderChecks } from './checks';

/** The part of DelegatedAuth the /metrics guard calls (a fake stands in for it in unit tests). */
export type MetricsAuthenticator = Pick<DelegatedAuth, 'authenticateToken' | 'authorize'>;

/** What kube-apiserver and metrics-server ask for a scrape: get on the non-resource URL /metrics. */
export const METRICS_ACCESS: AccessAttributes = { nonResource: { path: '/metrics', verb: 'get' } };

export interface ProbeServerOptions {
  log: Logger;
  /** Served on /metrics when given; a listener without it (the probe port) answers /metrics 404. */
  registry?: Registry;
  /**
   * Who may read /metrics: a bearer token the API server authenticates (TokenReview), allowed
   * get on the non-resource URL /metrics (SubjectAccessReview), as kube-apiserver and
   * metrics-server authorize their own scrapes; 401 without one, 403 when not allowed. Absent:
   * anyone who reaches the port (`--metrics-auth=none`). The probes never ask: the kubelet
   * sends no token.
   */
  metricsAuth?: MetricsAuthenticator;
  /** Listen over HTTPS with this certificate, and each one it changes to (a bearer token is never sent in the clear); plain HTTP without. */
  tls?: ServingPair;
  /** Shared check sets, so two listeners (metrics and probe addresses) answer alike. */
  healthz?: CheckSet;
  readyz?: CheckSet;
}

/** What differs between the listeners of one component: the probe port serves no metrics, the metrics port may be guarded. */
export type ListenerRole = Pick<ProbeServerOptions, 'registry' | 'metricsAuth' | 'tls'>;

/**
 * An HTTP(S) endpoint of a component: /healthz (alive: restart me if failing), /readyz
 * (route to me / I am synced; names every failing check), /livez, and /metrics (prom-client)
 * when it has a registry.
 */
export class ProbeServer {
  readonly healthz: CheckSet;
  readonly readyz: CheckSet;
  private server: Server | undefined;
  private unwatch: (() => void) | undefined;

  constructor(private readonly opts: ProbeServerOptions) {
    this.healthz = opts.healthz ?? new CheckSet();
    this.readyz = opts.readyz ?? new CheckSet();
  }

  /** Another listener answering from the same checks, with its own registry, guard and certificate. */
  sibling(role: ListenerRole): ProbeServer {
    return new ProbeServer({ log: this.opts.log, ...role, healthz: this.healthz, readyz: this.readyz });
  }

  addHealthzCheck(name: string, check: Check): void {
    this.healthz.add(name, check);
  }

  addReadyzCheck(name: string, check: Check): void {
    this.readyz.add(name, check);
  }

  async listen(addr: BindAddress): Promise<BindAddress> {
    const handler = guardRequests((req, res) => this.handle(req, res), { log: this.opts.log });
    const tls = this.opts.tls;
    let server: Server;
    if (tls) {
      const tlsServer = createTlsServer({ ...tls.current }, handler);
      this.unwatch = serveWatched(tlsServer, tls);
      server = tlsServer;
    } else server = createServer(handler);
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
    const host = a.family === 'IPv6' ? `[${a.address}]` : a.address;
    // the local e2e system reads where each listener is from this line: keep `url` and the messages
    this.opts.log.info(
      {
        address: `${a.address}:${a.port}`,
        url: `${tls ? 'https' : 'http'}://${host}:${a.port}`,
        ...(this.opts.registry ? { metricsAuth: this.opts.metricsAuth ? 'delegated' : 'none' } : {}),
      },
      this.opts.registry ? 'metrics server listening' : 'probe server listening',
    );
    return { host: a.address, port: a.port };
  }

  async close(): Promise<void> {
    this.unwatch?.();
    this.opts.tls?.close();
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    await closeServer(s);
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
        const registry = this.opts.registry;
        if (!registry) return send(res, 404, 'not found\n');
        const auth = this.opts.metricsAuth;
        if (auth) {
          try {
            await authorizeScrape(auth, req.headers.authorization);
          } catch (err) {
            const status = statusForError(err);
            if (status.code >= 500) this.opts.log.warn({ err }, 'a /metrics scrape could not be authorized');
            return sendKubeStatus(res, status);
          }
        }
        return send(res, 200, await registry.metrics(), registry.contentType);
      }
      default:
        return send(res, 404, 'not found\n');
    }
  }
}

/** The caller of a scrape, or a StatusError: 401 without a token that authenticates, 403 when RBAC does not allow it. */
export async function authorizeScrape(auth: MetricsAuthenticator, authorization: string | undefined): Promise<UserInfo> {
  const token = /^Bearer\s+(.+)$/i.exec(authorization ?? '')?.[1]?.trim() ?? '';
  const user = token === '' ? undefined : await auth.authenticateToken(token);
  if (user === undefined) throw new StatusError('Unauthorized', 'Unauthorized');
  const d: Decision = await auth.authorize(user, METRICS_ACCESS);
  if (!d.allowed)
    throw new StatusError('Forbidden', `forbidden: User "${user.username}" cannot get path "/metrics"${d.reason ? `: ${d.reason}` : ''}`);
  return user;
}

function send(res: ServerResponse, status: number, body: string, contentType = 'text/plain; charset=utf-8'): void {
  res.writeHead(status, { 'content-type': contentType, 'x-content-type-options': 'nosniff' });
  res.end(body);
}
