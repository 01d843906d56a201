import { request, type IncomingMessage } from 'node:http';
import { SANDBOX_PHASES, synthesizeSandbox, type InventoryEntry, type NodeInventory } from '@sandbox-scale/scale-core';
import { eventually } from '@sandbox-scale/e2e';
import type { SandboxCache } from '../storage/sandbox-cache';
import type { SandboxesREST } from '../storage/sandboxes-rest';
import { cacheOnlySandboxes, startWatchServer, type WatchServer } from './watch-fixture';

const NS = 'team-a';
const PHASE = 'sandbox.cocoonstack.io/phase';

interface WireEvent {
  readonly type: string;
  readonly object: {
    code?: number;
    reason?: string;
    metadata?: { name?: string; resourceVersion?: string; labels?: Record<string, string> };
    status?: { nodeName?: string };
  };
}

const entry = (name: string, phase: string): InventoryEntry => ({
  name: `${NS}/${name}`,
  id: `sb_${name}`,
  phase,
  claimRef: `${NS}/${name}`,
});
let etcdRv = 100;
const inventory = (node: string, entries: InventoryEntry[]): NodeInventory => ({
  apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
  kind: 'NodeInventory',
  metadata: { name: node, resourceVersion: String(etcdRv++) },
  node,
  address: '10.0.0.1:7777',
  entries,
});

describe('watches with selectors and resume points', () => {
  let watchServer: WatchServer;
  let port = 0;
  let cache: SandboxCache;
  let sandboxes: SandboxesREST;
  /** The revision the cache synced at: a watch from before it is 410. */
  let startRev = 0;
  const open: IncomingMessage[] = [];

  /** Opens a watch; `events()` is what arrived so far. */
  async function watch(query: string): Promise<{ events: () => WireEvent[]; ended: Promise<void> }> {
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: `/?watch=true&timeoutSeconds=30&${query}` }, resolve);
      req.on('error', reject);
      req.end();
    });
    open.push(res);
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (c: string) => (text += c));
    const ended = new Promise<void>((resolve) => res.on('end', () => resolve()));
    return {
      events: () =>
        text
          .split('\n')
          .filter((l) => l !== '')
          .map((l) => JSON.parse(l) as WireEvent),
      ended,
    };
  }

  /** Waits until `pred` holds for the events, on the event loop (the server writes asynchronously). */
  function until(events: () => WireEvent[], pred: (e: WireEvent[]) => boolean): Promise<WireEvent[]> {
    return eventually(
      () => {
        if (!pred(events()))
          throw new Error(
            `condition not met; events: ${JSON.stringify(events().map((e) => `${e.type} ${e.object.metadata?.name ?? ''}`))}`,
          );
        return events();
      },
      { timeoutMs: 10_000, intervalMs: 5 },
    );
  }

  beforeAll(async () => {
    sandboxes = cacheOnlySandboxes({ watchHistory: 1_000, graceMs: 50 });
    cache = sandboxes.cache;
    cache.upsertInventory(inventory('n1', [entry('a', SANDBOX_PHASES.running), entry('b', SANDBOX_PHASES.running)]));
    cache.upsertInventory(inventory('n2', []));
    sandboxes.markSynced(undefined);
    startRev = sandboxes.revision;
    watchServer = await startWatchServer(sandboxes, NS);
    port = watchServer.port;
  });

  afterAll(async () => {
    for (const r of open) r.destroy();
    cache.stop();
    await watchServer.close();
  });

  it('sends DELETED with the last matching state when a sandbox leaves a label selector, and ADDED when it comes back', async () => {
    const w = await watch(`labelSelector=${encodeURIComponent(`${PHASE}=Running`)}`);
    await until(w.events, (e) => e.length === 2);
    cache.upsertInventory(inventory('n1', [entry('a', SANDBOX_PHASES.hibernated), entry('b', SANDBOX_PHASES.running)]));
    const rev = sandboxes.revision;
    const left = await until(w.events, (e) => e.length === 3);
    expect(left[2]).toMatchObject({
      type: 'DELETED',
      object: { metadata: { name: 'a', resourceVersion: String(rev), labels: { [PHASE]: 'Running' } } },
    });
    // a change of a sandbox the selector never matched is nothing to this watch
    const other = await watch(`labelSelector=${encodeURIComponent(`${PHASE}=Hibernated`)}`);
    await until(other.events, (e) => e.length === 1);
    cache.upsertInventory(inventory('n1', [entry('a', SANDBOX_PHASES.running), entry('b', SANDBOX_PHASES.running)]));
    const back = await until(w.events, (e) => e.length === 4);
    expect(back[3]).toMatchObject({ type: 'ADDED', object: { metadata: { name: 'a', labels: { [PHASE]: 'Running' } } } });
    expect((await until(other.events, (e) => e.length === 2)).map((e) => e.type)).toEqual(['ADDED', 'DELETED']);
    expect(w.events().map((e) => `${e.type} ${e.object.metadata?.name ?? ''}`)).toEqual(['ADDED a', 'ADDED b', 'DELETED a', 'ADDED a']);
  });

  it('moves a sandbox between status.nodeName watches when the node that reports it changes', async () => {
    const on1 = await watch('fieldSelector=status.nodeName%3Dn1');
    const on2 = await watch('fieldSelector=status.nodeName%3Dn2');
    await until(on1.events, (e) => e.length === 2);
    const created = { name: `${NS}/c`, id: 'sb_c', phase: SANDBOX_PHASES.running, claimRef: `${NS}/c` };
    cache.addCreated('n1', created, synthesizeSandbox('n1', created, { resourceVersion: '0' }));
    await until(on1.events, (e) => e.length === 3);
    // the create answered n1, the sandbox is reported by n2: it leaves one watch and enters the other
    cache.upsertInventory(inventory('n2', [created]));
    expect((await until(on1.events, (e) => e.length === 4))[3]).toMatchObject({
      type: 'DELETED',
      object: { metadata: { name: 'c' }, status: { nodeName: 'n1' } },
    });
    expect((await until(on2.events, (e) => e.length === 1))[0]).toMatchObject({
      type: 'ADDED',
      object: { metadata: { name: 'c' }, status: { nodeName: 'n2' } },
    });
  });

  it('answers a resume point from before the last sync with a 410 ERROR event, so the client relists', async () => {
    const before = await watch(`resourceVersion=${startRev - 1}`);
    await before.ended;
    expect(before.events()).toEqual([{ type: 'ERROR', object: expect.objectContaining({ kind: 'Status', code: 410, reason: 'Expired' }) }]);
    // a point ahead of this replica (another replica's list) resumes from here
    const ahead = await watch(`resourceVersion=${sandboxes.revision + 5}`);
    cache.upsertInventory(inventory('n2', [entry('c', SANDBOX_PHASES.running), entry('d', SANDBOX_PHASES.running)]));
    expect((await until(ahead.events, (e) => e.length === 1))[0]).toMatchObject({ type: 'ADDED', object: { metadata: { name: 'd' } } });
    // from the sync on, the history replays
    const resumed = await watch(`resourceVersion=${startRev}`);
    const replayed = await until(resumed.events, (e) => e.some((x) => x.object.metadata?.name === 'c'));
    expect(replayed.map((e) => e.type)).not.toContain('ERROR');
  });
});
