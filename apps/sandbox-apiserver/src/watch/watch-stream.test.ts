import { request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { NodeInventory } from '@sandbox-scale/scale-core';
import { parseListQuery } from '../http/list-query';
import type { SandboxCache } from '../storage/sandbox-cache';
import type { SandboxesREST } from '../storage/sandboxes-rest';
import { MAX_PENDING_EVENTS } from './watch-stream';
import { cacheOnlySandboxes, startWatchServer, type WatchServer } from './watch-fixture';

const NS = 'team-a';
// ~350 bytes per event: an initial list of several MiB, far more than a socket holds
const SANDBOXES = 20_000;

function inventory(count: number, node = 'n1'): NodeInventory {
  const entries = Array.from({ length: count }, (_, i) => ({
    name: `${NS}/sb-${i}`,
    id: `sb_${i}`,
    phase: 'Running',
    claimRef: `${NS}/sb-${i}`,
  }));
  return {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'NodeInventory',
    metadata: { name: node, resourceVersion: '1' },
    node,
    address: '10.0.0.1:7777',
    entries,
  };
}

describe('serveWatch backpressure', () => {
  let watchServer: WatchServer;
  let port = 0;
  let sandboxes: SandboxesREST;
  let cache: SandboxCache;
  const responses: ServerResponse[] = [];

  async function openPaused(): Promise<{ res: IncomingMessage; serverSide: ServerResponse }> {
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/?watch=true&timeoutSeconds=60' }, resolve);
      req.on('error', reject);
      req.end();
    });
    res.pause();
    const serverSide = responses.at(-1) as ServerResponse;
    // the kernel takes what it can; then the socket is full and the stream must stop writing
    for (let i = 0; i < 10_000 && !serverSide.writableNeedDrain; i++) await new Promise((resolve) => setImmediate(resolve));
    return { res, serverSide };
  }

  beforeAll(async () => {
    sandboxes = cacheOnlySandboxes({ watchHistory: 100_000, graceMs: 50 });
    cache = sandboxes.cache;
    cache.upsertInventory(inventory(SANDBOXES));
    sandboxes.markSynced(undefined);
    watchServer = await startWatchServer(sandboxes, NS, (res) => responses.push(res));
    port = watchServer.port;
  });

  afterAll(async () => {
    cache.stop();
    await watchServer.close();
  });

  it('streams the whole initial list to a client that reads slowly, buffering only what the socket holds', async () => {
    // the client reads nothing yet: the server must wait for drain, not queue the list in memory
    const { res, serverSide } = await openPaused();
    expect(serverSide.writableNeedDrain).toBe(true);
    expect(serverSide.writableLength).toBeLessThan(256 * 1024);

    // then it reads, a chunk at a time
    let text = '';
    let events = 0;
    await new Promise<void>((resolve, reject) => {
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
        const lines = text.split('\n');
        text = lines.pop() ?? '';
        events += lines.filter((l) => l.startsWith('{"type":"ADDED"')).length;
        if (events >= SANDBOXES) {
          res.destroy();
          resolve();
        }
      });
      res.on('error', reject);
      res.resume();
    });
    expect(events).toBe(SANDBOXES);
  }, 60_000);

  it('closes a watch whose client stopped reading once more live events wait than the cap, and unsubscribes it', async () => {
    // the previous watch is gone once the server saw its client leave
    for (let i = 0; i < 10_000 && sandboxes.hub.listenerCount > 0; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(sandboxes.hub.listenerCount).toBe(0);
    const { res, serverSide } = await openPaused();
    expect(sandboxes.hub.listenerCount).toBe(1);
    const object = (await sandboxes.list({ ...parseListQuery(NS, new URLSearchParams()), limit: 1 })).items[0];
    if (object === undefined) throw new Error('no sandbox listed');
    let rev = sandboxes.revision;
    for (let i = 0; i <= MAX_PENDING_EVENTS; i++)
      sandboxes.hub.emit({
        type: 'MODIFIED',
        rev: ++rev,
        object: { ...object, metadata: { ...object.metadata, resourceVersion: String(rev) } },
      });
    expect(sandboxes.hub.listenerCount).toBe(0);
    expect(serverSide.writableEnded).toBe(true);
    res.destroy();
  });
});
