import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeList, type ListBody } from './list-writer';

interface Reply {
  readonly code: number;
  readonly headers: IncomingMessage['headers'];
  readonly text: string;
}

const envelope = (rows: unknown[]): Record<string, unknown> => ({
  kind: 'Table',
  apiVersion: 'meta.k8s.io/v1',
  metadata: { resourceVersion: '7' },
  columnDefinitions: [{ name: 'Name' }],
  rows,
});

const rowsOf = (from: number, n: number): unknown[] =>
  Array.from({ length: n }, (_, i) => ({ cells: [`sb-${from + i}`, 'say "hi"\n'], object: { metadata: { name: `sb-${from + i}` } } }));

function* partsOf(sizes: number[], pulled: { count: number } = { count: 0 }): Generator<ListBody> {
  let at = 0;
  for (const n of sizes) {
    pulled.count++;
    yield { body: envelope(rowsOf(at, n)), key: 'rows' };
    at += n;
  }
}

// writeList over a real HTTP server: what a client reads is the document JSON.stringify of the
// whole list would give, in one buffer or streamed.
describe('writeList', () => {
  let server: Server;
  let handler: (res: ServerResponse) => Promise<void> = () => Promise.resolve();

  beforeAll(async () => {
    server = createServer((_req, res) => {
      handler(res).catch((err: unknown) => {
        // as sendKubeStatus does: a response under way is ended as it is
        if (!res.headersSent) res.writeHead(500).end(String(err));
        else res.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const get = (): Promise<Reply> =>
    new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, path: '/' }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ code: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
        // a transfer the server broke off
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end();
    });

  it('streams many parts as the bytes of the whole list, with the first envelope and no Content-Length', async () => {
    handler = (res) => writeList(res, partsOf([1000, 1000, 0, 437]));
    const reply = await get();
    expect(reply.code).toBe(200);
    expect(reply.headers['content-length']).toBeUndefined();
    expect(reply.headers['content-type']).toBe('application/json');
    expect(reply.text).toBe(JSON.stringify(envelope(rowsOf(0, 2437))));
  });

  it('sends a single part as one buffer with its Content-Length, an empty array included', async () => {
    handler = (res) => writeList(res, partsOf([3]));
    const one = await get();
    expect(one.text).toBe(JSON.stringify(envelope(rowsOf(0, 3))));
    expect(one.headers['content-length']).toBe(String(Buffer.byteLength(one.text)));
    handler = (res) => writeList(res, partsOf([0]));
    expect((await get()).text).toBe(JSON.stringify(envelope([])));
    handler = (res) => writeList(res, partsOf([0, 0]));
    expect((await get()).text).toBe(JSON.stringify(envelope([])));
  });

  it('leaves an error of the first part to the caller, before any header is written', async () => {
    handler = (res) =>
      writeList(
        res,
        (function* (): Generator<ListBody> {
          yield* [];
          throw new Error('continue key is not valid');
        })(),
      );
    expect(await get()).toMatchObject({ code: 500, text: 'Error: continue key is not valid' });
  });

  it('aborts the transfer when a later part fails, so no client reads a complete list', async () => {
    handler = (res) =>
      writeList(
        res,
        (function* (): Generator<ListBody> {
          yield* partsOf([2, 2, 2]);
          throw new Error('the snapshot is gone');
        })(),
      );
    await expect(get()).rejects.toThrow();
  });

  it('stops pulling parts once the client is gone', async () => {
    const pulled = { count: 0 };
    let finished: Promise<void> = Promise.resolve();
    handler = (res) =>
      (finished = writeList(
        res,
        partsOf(
          Array.from({ length: 2000 }, () => 1000),
          pulled,
        ),
      ));
    await new Promise<void>((resolve) => {
      const req = request({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, path: '/' }, (res) => {
        // read one chunk, then hang up
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.on('error', () => undefined);
      req.on('close', resolve);
      req.end();
    });
    await finished;
    expect(pulled.count).toBeGreaterThan(1);
    expect(pulled.count).toBeLessThan(2000);
  });
});
