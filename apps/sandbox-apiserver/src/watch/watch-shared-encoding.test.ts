import { request, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import type { NodeInventory, ServedSandbox } from '@sandbox-scale/scale-core';
import { parseListQuery } from '../http/list-query';
import type { SandboxesREST } from '../storage/sandboxes-rest';
import { cacheOnlySandboxes, startWatchServer, type WatchServer } from './watch-fixture';

const NS = 'team-a';
const WATCHERS = 8;

const inventory: NodeInventory = {
  apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
  kind: 'NodeInventory',
  metadata: { name: 'n1', resourceVersion: '1' },
  node: 'n1',
  address: '10.0.0.1:7777',
  entries: [{ name: `${NS}/sb-0`, id: 'sb_0', phase: 'Running', claimRef: `${NS}/sb-0` }],
};

/** Opens a watch and resolves with the first line holding `marker`. */
function watchFor(port: number, marker: string): Promise<{ line: string; res: IncomingMessage }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/?watch=true&timeoutSeconds=60&resourceVersion=0' }, (res) => {
      let buf = '';
      res.on('data', (c: Buffer) => {
        buf += c.toString();
        const line = buf.split('\n').find((l) => l.includes(marker));
        if (line !== undefined) resolve({ line, res });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('a live event to many watches', () => {
  let sandboxes: SandboxesREST;
  let server: WatchServer;
  const encoded: ServedSandbox[] = [];

  beforeAll(async () => {
    sandboxes = cacheOnlySandboxes({ watchHistory: 1000, graceMs: 50 });
    sandboxes.cache.upsertInventory(inventory);
    sandboxes.markSynced(undefined);
    server = await startWatchServer(sandboxes, NS, undefined, {
      sharedEncoding: 'object',
      transform: (s) => (encoded.push(s), s),
    });
  });

  afterAll(async () => {
    sandboxes.cache.stop();
    await server.close();
  });

  it('is encoded once and written to every watch as the same bytes', async () => {
    const watches = Array.from({ length: WATCHERS }, () => watchFor(server.port, '"shared-marker"'));
    for (let i = 0; i < 1000 && sandboxes.hub.listenerCount < WATCHERS; i++) await new Promise((r) => setImmediate(r));
    expect(sandboxes.hub.listenerCount).toBe(WATCHERS);
    const object = (await sandboxes.list({ ...parseListQuery(NS, new URLSearchParams()), limit: 1 })).items[0];
    if (object === undefined) throw new Error('no sandbox listed');
    const before = encoded.length;
    const rev = sandboxes.revision + 1;
    const changed = { ...object, metadata: { ...object.metadata, resourceVersion: String(rev), labels: { mark: 'shared-marker' } } };
    sandboxes.hub.emit({ type: 'MODIFIED', rev, object: changed });
    const got = await Promise.all(watches);
    for (const w of got) w.res.destroy();
    expect(new Set(got.map((w) => w.line)).size).toBe(1);
    expect(JSON.parse(got[0]?.line ?? '{}')).toMatchObject({
      type: 'MODIFIED',
      object: { metadata: { labels: { mark: 'shared-marker' } } },
    });
    // the initial lists were each watch's own; the change was encoded once for all of them
    expect(encoded.slice(before).filter((s) => s === changed)).toHaveLength(1);
  });
});

describe("a node's changes to a watch", () => {
  let sandboxes: SandboxesREST;
  let server: WatchServer;

  beforeAll(async () => {
    sandboxes = cacheOnlySandboxes({ watchHistory: 1000, graceMs: 50 });
    sandboxes.cache.upsertInventory(inventory);
    sandboxes.markSynced(undefined);
    server = await startWatchServer(sandboxes, NS, undefined, { sharedEncoding: 'object', transform: (s) => s });
  });

  afterAll(async () => {
    sandboxes.cache.stop();
    await server.close();
  });

  /** The chunks of a chunked response as the server wrote them: one per write. */
  function rawChunks(port: number, path: string): { chunks: string[]; close: () => void } {
    const chunks: string[] = [];
    let buf = Buffer.alloc(0);
    let body = false;
    const socket = connect(port, '127.0.0.1', () => socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`));
    socket.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      if (!body) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        buf = buf.subarray(end + 4);
        body = true;
      }
      for (;;) {
        const eol = buf.indexOf('\r\n');
        if (eol < 0) return;
        const size = parseInt(buf.subarray(0, eol).toString(), 16);
        if (buf.length < eol + 2 + size + 2) return;
        chunks.push(buf.subarray(eol + 2, eol + 2 + size).toString());
        buf = buf.subarray(eol + 2 + size + 2);
      }
    });
    return { chunks, close: () => socket.destroy() };
  }

  it('go out as one write when they come in one go, every event in order', async () => {
    const object = (await sandboxes.list({ ...parseListQuery(NS, new URLSearchParams()), limit: 1 })).items[0];
    if (object === undefined) throw new Error('no sandbox listed');
    const watch = rawChunks(server.port, `/?watch=true&timeoutSeconds=60&resourceVersion=${sandboxes.revision}`);
    for (let i = 0; i < 1000 && sandboxes.hub.listenerCount < 1; i++) await new Promise((r) => setImmediate(r));
    expect(sandboxes.hub.listenerCount).toBe(1);
    const first = sandboxes.revision + 1;
    for (let i = 0; i < 50; i++) {
      const rev = first + i;
      sandboxes.hub.emit({
        type: 'MODIFIED',
        rev,
        object: { ...object, metadata: { ...object.metadata, resourceVersion: String(rev), labels: { batch: `b${i}` } } },
      });
    }
    const withEvents = (): string[] => watch.chunks.filter((c) => c.includes('"batch"'));
    for (
      let i = 0;
      i < 1000 &&
      withEvents()
        .join('')
        .split('\n')
        .filter((l) => l !== '').length < 50;
      i++
    )
      await new Promise((r) => setTimeout(r, 5));
    watch.close();
    const lines = withEvents()
      .join('')
      .split('\n')
      .filter((l) => l !== '');
    expect(
      lines.map((l) => (JSON.parse(l) as { object: { metadata: { resourceVersion: string } } }).object.metadata.resourceVersion),
    ).toEqual(Array.from({ length: 50 }, (_, i) => String(first + i)));
    expect(withEvents()).toHaveLength(1);
  });
});
