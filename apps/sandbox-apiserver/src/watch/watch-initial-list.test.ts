import { request, type IncomingMessage, type ServerResponse } from 'node:http';
import { SANDBOX_PHASES, type InventoryEntry, type NodeInventory } from '@sandbox-scale/scale-core';
import type { SandboxCache } from '../storage/sandbox-cache';
import { INITIAL_EVENTS_END } from './watch-stream';
import { cacheOnlySandboxes, startWatchServer, type WatchServer } from './watch-fixture';

const NODES = 20;
const PER_NODE = 5_000;
const SANDBOXES = NODES * PER_NODE;
/** Changes made while the initial list is still streaming. */
const LIVE_CHANGES = 50;
/** What the client takes before it stops reading for a turn: a slow reader, never a stopped one. */
const READ_BURST = 256 * 1024;

function entriesOf(node: number, hibernated: ReadonlySet<number> = new Set()): InventoryEntry[] {
  return Array.from({ length: PER_NODE }, (_, i) => {
    const name = `team-${i % 50}/sb-${node}-${i}`;
    return {
      name,
      id: `sb_${node}_${i}`,
      phase: hibernated.has(i) ? SANDBOX_PHASES.hibernated : SANDBOX_PHASES.running,
      claimRef: name,
      addr: `10.${node}.${(i >> 8) & 255}.${i & 255}:7777`,
      deadline: '2030-01-01T00:00:00Z',
      claimedAt: '2026-01-01T00:00:00Z',
    };
  });
}

function inventory(node: number, rv: number, hibernated?: ReadonlySet<number>): NodeInventory {
  const name = `node-${node}`;
  return {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'NodeInventory',
    metadata: { name, resourceVersion: String(rv) },
    node: name,
    address: `10.${node}.0.1:7777`,
    entries: entriesOf(node, hibernated),
  };
}

interface Line {
  readonly type: string;
  readonly object: { metadata?: { name?: string; namespace?: string; annotations?: Record<string, string> } };
}

/**
 * kubectl get sandboxes -A -w with watch-list (sendInitialEvents) at 100,000 sandboxes: every
 * ADDED, then the initial-events-end bookmark, then what changed meanwhile, to a client that
 * reads in bursts — with the server holding no more than a socket's worth of encoded events.
 */
describe('watch-list of 100,000 sandboxes', () => {
  let watchServer: WatchServer;
  let port = 0;
  let cache: SandboxCache;
  const responses: ServerResponse[] = [];

  beforeAll(async () => {
    const sandboxes = cacheOnlySandboxes({ watchHistory: 10_000, graceMs: 60_000 });
    cache = sandboxes.cache;
    for (let n = 0; n < NODES; n++) cache.upsertInventory(inventory(n, 10 + n));
    sandboxes.markSynced(undefined);
    watchServer = await startWatchServer(sandboxes, '', (res) => responses.push(res));
    port = watchServer.port;
  }, 60_000);

  afterAll(async () => {
    cache.stop();
    await watchServer.close();
  });

  it('streams every ADDED and the initial-events-end bookmark, then the changes made meanwhile', async () => {
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          path: '/?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=600',
        },
        resolve,
      );
      req.on('error', reject);
      req.end();
    });
    const serverSide = responses.at(-1) as ServerResponse;
    const added = new Set<string>();
    const order: string[] = [];
    const modified = new Set<string>();
    let bytes = 0;
    let maxServerBuffer = 0;
    let pauses = 0;
    let sinceLastPause = 0;
    let changed = false;
    let partial = '';
    const hibernated = new Set(Array.from({ length: LIVE_CHANGES }, (_, i) => i * 7));
    await new Promise<void>((resolve, reject) => {
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        bytes += Buffer.byteLength(chunk);
        maxServerBuffer = Math.max(maxServerBuffer, serverSide.writableLength);
        const lines = (partial + chunk).split('\n');
        partial = lines.pop() ?? '';
        for (const l of lines) {
          const ev = JSON.parse(l) as Line;
          const key = `${ev.object.metadata?.namespace ?? ''}/${ev.object.metadata?.name ?? ''}`;
          if (ev.type === 'ADDED') added.add(key);
          else if (ev.type === 'MODIFIED') modified.add(key);
          if (ev.type === 'BOOKMARK' && ev.object.metadata?.annotations?.[INITIAL_EVENTS_END] === 'true') order.push('END');
          else if (order.at(-1) !== ev.type) order.push(ev.type);
        }
        // halfway through the initial list, a node reports changes: they follow the bookmark
        if (!changed && added.size >= SANDBOXES / 2) {
          changed = true;
          cache.upsertInventory(inventory(0, 1_000, hibernated));
        }
        if (modified.size === LIVE_CHANGES) {
          res.destroy();
          resolve();
          return;
        }
        sinceLastPause += Buffer.byteLength(chunk);
        if (sinceLastPause >= READ_BURST) {
          // the client stops reading for a turn: the server must wait for it, not buffer ahead
          sinceLastPause = 0;
          pauses++;
          res.pause();
          setImmediate(() => res.resume());
        }
      });
      res.on('error', reject);
      res.on('end', () => reject(new Error(`the watch ended after ${added.size} ADDED, ${modified.size} MODIFIED`)));
    });
    const figures = {
      sandboxes: SANDBOXES,
      added: added.size,
      modified_after_end: modified.size,
      bytes,
      client_pauses: pauses,
      max_server_buffer_bytes: maxServerBuffer,
    };
    process.stdout.write(`watch-list figures ${JSON.stringify(figures)}\n`);
    expect(added.size).toBe(SANDBOXES);
    expect(order).toEqual(['ADDED', 'END', 'MODIFIED']);
    expect(modified.size).toBe(LIVE_CHANGES);
    expect(bytes).toBeGreaterThan(SANDBOXES * 100);
    expect(pauses).toBeGreaterThan(0);
    // a socket's worth (the stream stops writing once it is full), never the list
    expect(maxServerBuffer).toBeLessThan(1024 * 1024);
  }, 180_000);
});
