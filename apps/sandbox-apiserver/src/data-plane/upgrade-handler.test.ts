import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import { connect, createServer as createTcpServer, type AddressInfo, type Server as TcpServer, type Socket } from 'node:net';
import { createLogger } from '@sandbox-scale/kube-runtime';
import { StatusError } from '@sandbox-scale/scale-core';
import type { RequestInfo } from '../http/request-info';
import { UpgradeHandler, type UpgradeGate } from './upgrade-handler';

// The upgrade listener over a loopback HTTP server, its gate and the node's relay faked: a TCP
// echo server stands in for the guest port.

const quiet = createLogger({ name: 'upgrade-test', level: 'silent' });
let http: Server;
let echo: TcpServer;
let base = '';
const asked: RequestInfo[] = [];
const opened: { namespace: string; name: string; port: number; user: string }[] = [];
let allow = true;

const gate: UpgradeGate = {
  authenticate: async (req) => (req.headers.authorization === 'Bearer ok' ? { username: 'alice', groups: [], extra: {} } : undefined),
  authorize: async (_user, info) => {
    asked.push(info);
    if (!allow) throw new StatusError('Forbidden', 'no');
  },
  ready: () => undefined,
  acquire: () => () => undefined,
};

beforeAll(async () => {
  echo = createTcpServer({ allowHalfOpen: true }, (s) => {
    const chunks: Buffer[] = [];
    s.on('data', (c: Buffer) => chunks.push(c));
    // answers only once the caller's side ended: a half-close must come through
    s.on('end', () => s.end(`echo:${Buffer.concat(chunks).toString()}`));
  });
  await new Promise<void>((r) => echo.listen(0, '127.0.0.1', () => r()));
  const echoPort = (echo.address() as AddressInfo).port;
  const portForward = {
    // idle relays end soon here, so a test can see one closed
    bounds: { idleTimeoutMs: 300, maxDurationMs: 60_000 },
    open: async (namespace: string, name: string, port: number, caller: { user: string }): Promise<Socket> => {
      opened.push({ namespace, name, port, user: caller.user });
      if (port === 9) throw new StatusError('ServiceUnavailable', `cannot reach sandbox ${namespace}/${name}`, { retryAfterSeconds: 1 });
      return new Promise((resolve) => {
        const s = connect(echoPort, '127.0.0.1', () => resolve(s));
      });
    },
  };
  const upgrades = new UpgradeHandler(gate, portForward, quiet);
  http = createServer((_req, res) => res.end('not an upgrade'));
  http.on('upgrade', (req: IncomingMessage, socket, head: Buffer) => upgrades.handle(req, socket, head));
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((r) => http.close(r));
  await new Promise((r) => echo.close(r));
});

const PF = '/apis/agents.x-k8s.io/v1beta1/namespaces/team/sandboxes/box/portforward';

type Outcome = { upgraded: true; socket: Socket; upgrade: string } | { upgraded: false; status: number; body: string };

function upgrade(path: string, opts: { method?: string; protocol?: string; auth?: string } = {}): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, {
      method: opts.method ?? 'POST',
      headers: { Connection: 'Upgrade', Upgrade: opts.protocol ?? 'tcp', Authorization: opts.auth ?? 'Bearer ok' },
    });
    req.on('upgrade', (res, socket: Socket) => resolve({ upgraded: true, socket, upgrade: String(res.headers.upgrade) }));
    req.on('response', (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ upgraded: false, status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const statusOf = (o: Outcome): number => (o.upgraded ? 101 : o.status);

describe('the upgrade listener', () => {
  it('relays after 101, half-close included, once the caller is authorized as create sandboxes/portforward (GET too)', async () => {
    for (const method of ['POST', 'GET']) {
      const o = await upgrade(`${PF}?port=8080`, { method });
      if (!o.upgraded) throw new Error(`${o.status} ${o.body}`);
      expect(o.upgrade).toBe('tcp');
      const answer = await new Promise<string>((resolve) => {
        let text = '';
        o.socket.on('data', (c: Buffer) => (text += c.toString()));
        o.socket.on('end', () => resolve(text));
        o.socket.end('ping');
      });
      o.socket.destroy();
      expect(answer).toBe('echo:ping');
      expect(asked.at(-1)).toMatchObject({
        verb: 'create',
        resource: 'sandboxes',
        subresource: 'portforward',
        namespace: 'team',
        name: 'box',
      });
    }
    expect(opened.at(-1)).toEqual({ namespace: 'team', name: 'box', port: 8080, user: 'alice' });
  });

  it('closes a port-forward that stays idle past its bound', async () => {
    const o = await upgrade(`${PF}?port=8080`);
    if (!o.upgraded) throw new Error(`${o.status} ${o.body}`);
    // the guest answers only once the caller ends its side, which it never does: only the bound ends it
    o.socket.resume();
    const closed = await new Promise<boolean>((resolve) => o.socket.once('close', () => resolve(true)));
    expect(closed).toBe(true);
  });

  it('answers with a Status and closes: 401 anonymous, 403 refused, 400 another path, protocol or port, 503 from the node', async () => {
    expect(statusOf(await upgrade(`${PF}?port=8080`, { auth: 'Bearer nope' }))).toBe(401);
    allow = false;
    const refused = await upgrade(`${PF}?port=8080`);
    allow = true;
    expect(statusOf(refused)).toBe(403);
    expect(statusOf(await upgrade('/apis/agents.x-k8s.io/v1beta1/namespaces/team/sandboxes/box/exec'))).toBe(400);
    expect(statusOf(await upgrade('/api/v1/namespaces/team/pods/p/portforward'))).toBe(400);
    expect(statusOf(await upgrade(`${PF}?port=8080`, { protocol: 'websocket' }))).toBe(400);
    expect(statusOf(await upgrade(`${PF}?port=0`))).toBe(400);
    expect(statusOf(await upgrade(PF))).toBe(400);
    const busy = await upgrade(`${PF}?port=9`);
    expect(busy.upgraded ? 101 : { status: busy.status, body: JSON.parse(busy.body) as unknown }).toEqual({
      status: 503,
      body: expect.objectContaining({ kind: 'Status', reason: 'ServiceUnavailable', message: 'cannot reach sandbox team/box' }),
    });
  });
});
