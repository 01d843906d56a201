import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StubCall {
  method: string;
  path: string;
  authorization: string | undefined;
  connection: string | undefined;
  body: string;
}

export type StubHandler = (call: StubCall, res: ServerResponse) => void;

/** A loopback HTTP server that records every call and lets each test script the reply. */
export interface StubNode {
  url: string;
  calls: StubCall[];
  connections: () => number;
  setHandler: (h: StubHandler) => void;
  close: () => Promise<void>;
}

export function replyJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export async function startStubNode(handler: StubHandler = (_c, res) => replyJson(res, 404, { error: 'not found' })): Promise<StubNode> {
  let current = handler;
  const calls: StubCall[] = [];
  let connections = 0;
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const call: StubCall = {
        method: req.method ?? '',
        path: req.url ?? '',
        authorization: req.headers.authorization,
        connection: req.headers.connection,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      calls.push(call);
      current(call, res);
    });
  });
  server.keepAliveTimeout = 60_000;
  server.on('connection', () => {
    connections++;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    connections: () => connections,
    setHandler: (h) => {
      current = h;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
