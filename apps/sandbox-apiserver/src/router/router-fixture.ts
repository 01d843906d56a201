// Set-up the router tests share: the answers of an API server (tokens and grants), a guest HTTP
// server on loopback, and sandboxes whose node relay opens a TCP connection to that guest.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import type { AccessAttributes, Decision, UserInfo } from '@sandbox-scale/kube-runtime';
import { NotFoundError } from '@sandbox-scale/scale-core';
import { SandboxdHttpError } from '@sandbox-scale/sandboxd-client';
import type { SandboxResolver } from './guest-port';

/** An API server's answers: tokens it knows, and `<user> <verb> <resource>/<sub> <ns>/<name>` grants. */
export class FakeReviews {
  readonly tokens = new Map<string, UserInfo>();
  readonly grants = new Set<string>();
  failing: Error | undefined;

  async authenticateToken(token: string): Promise<UserInfo | undefined> {
    if (this.failing) throw this.failing;
    return this.tokens.get(token);
  }

  async authorize(user: UserInfo, attrs: AccessAttributes): Promise<Decision> {
    if (this.failing) throw this.failing;
    if (!('resource' in attrs)) return { allowed: false, reason: '' };
    const r = attrs.resource;
    const key = `${user.username} ${r.verb} ${r.resource}/${r.subresource} ${r.namespace}/${r.name}`;
    const groupOk = r.group === 'agents.x-k8s.io' && user.groups.includes('system:authenticated');
    return this.grants.has(key) && groupOk ? { allowed: true, reason: '' } : { allowed: false, reason: 'no RBAC policy matched' };
  }
}

/** What the guest saw of one request. */
export interface SeenRequest {
  readonly method: string;
  readonly url: string;
  readonly rawHeaders: string[];
  readonly body: string;
}

/**
 * A guest runtime: `/echo` answers the request it saw as JSON, `/hang` never answers, `/drop`
 * closes the connection unanswered, `/stream` writes `n` chunks; an `Upgrade: echo` request switches and echoes bytes back.
 */
export class FakeGuest {
  readonly server: Server;
  readonly seen: SeenRequest[] = [];
  readonly hanging = new Set<ServerResponse>();

  constructor() {
    this.server = createServer((req, res) => void this.#serve(req, res));
    this.server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
      socket.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\nX-Guest: yes\r\n\r\n');
      if (head.length > 0) socket.write(head);
      socket.pipe(socket);
    });
  }

  async #serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const seen = { method: req.method ?? '', url: req.url ?? '', rawHeaders: req.rawHeaders, body: Buffer.concat(chunks).toString() };
    this.seen.push(seen);
    if (req.url === '/drop') {
      req.socket.destroy();
      return;
    }
    if (req.url === '/hang') {
      this.hanging.add(res);
      return;
    }
    if (req.url?.startsWith('/stream')) {
      const n = Number(new URL(req.url, 'http://x').searchParams.get('n') ?? '3');
      res.writeHead(200, { 'content-type': 'text/plain' });
      for (let i = 0; i < n; i++) res.write(`chunk-${i};`);
      res.end();
      return;
    }
    const body = JSON.stringify(seen);
    res.writeHead(201, { 'content-type': 'application/json', 'set-cookie': ['a=1', 'b=2'], 'x-guest': 'yes' });
    res.end(body);
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
  }

  async stop(): Promise<void> {
    for (const r of this.hanging) r.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

interface FakeSandbox {
  readonly node: string;
  readonly id: string;
  /** The token the node checks. */
  token: string;
  /** The token resolve hands out until forgotten (a stale one, to test the re-read). */
  cachedToken: string;
}

/**
 * Sandboxes as SandboxAccess serves them: `add` one under namespace/name; its node's relay dials
 * the guest port given at `guestPorts`, answers 404 for a wrong token and 502 for a port nothing
 * listens on.
 */
export class FakeSandboxes implements SandboxResolver {
  readonly #sandboxes = new Map<string, FakeSandbox>();
  /** Guest port -> loopback port it is served on. */
  readonly guestPorts = new Map<number, number>();

  add(namespace: string, name: string, sandbox: { node: string; id: string; token: string; cachedToken?: string }): void {
    this.#sandboxes.set(`${namespace}/${name}`, { ...sandbox, cachedToken: sandbox.cachedToken ?? sandbox.token });
  }

  async resolve(
    namespace: string,
    name: string,
  ): Promise<{
    client: { openPort: (id: string, token: string, port: number) => Promise<Socket> };
    id: string;
    token: string;
    node: string;
  }> {
    const sb = this.#sandboxes.get(`${namespace}/${name}`);
    if (sb === undefined) throw new NotFoundError({ group: 'agents.x-k8s.io', resource: 'sandboxes' }, name);
    return {
      client: { openPort: (id, token, port) => this.#openPort(sb, id, token, port) },
      id: sb.id,
      token: sb.cachedToken,
      node: sb.node,
    };
  }

  forget(node: string, id: string): void {
    for (const sb of this.#sandboxes.values()) if (sb.node === node && sb.id === id) sb.cachedToken = sb.token;
  }

  async #openPort(sb: FakeSandbox, id: string, token: string, port: number): Promise<Socket> {
    if (id !== sb.id || token !== sb.token)
      throw new SandboxdHttpError({ operation: 'openPort', statusCode: 404, message: 'unknown sandbox' });
    const local = this.guestPorts.get(port);
    if (local === undefined)
      throw new SandboxdHttpError({ operation: 'openPort', statusCode: 502, message: `nothing listens on ${port} (token ${token})` });
    const socket = connect({ host: '127.0.0.1', port: local });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    return socket;
  }
}
