import { Writable } from 'node:stream';
import { z } from 'zod';
import { createLogger } from '../log/logger';
import { ConfigMapResource } from '../client/resource';
import { Informer } from './informer';
import { FakeListWatcher, cm } from '../testing/fake-list-watcher';
import { WatchFailedError } from './list-watcher';

const CmSchema = z.object({
  apiVersion: z.literal('v1'),
  kind: z.literal('ConfigMap'),
  metadata: z.object({ name: z.string(), namespace: z.string(), uid: z.string(), resourceVersion: z.string() }),
  data: z.record(z.string(), z.string()).optional(),
});
type Cm = z.infer<typeof CmSchema>;

function setup() {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      cb();
    },
  });
  const log = createLogger({ name: 'test', level: 'debug', destination });
  const lw = new FakeListWatcher();
  const sleeps: number[] = [];
  const informer = new Informer<Cm>({
    resource: ConfigMapResource,
    parse: (o) => CmSchema.parse(o),
    log,
    listWatcher: lw,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
  });
  const events: string[] = [];
  informer.on({
    add: (o) => events.push(`add ${o.metadata.name}@${o.metadata.resourceVersion}`),
    update: (o, old) => events.push(`update ${o.metadata.name} ${old.metadata.resourceVersion}->${o.metadata.resourceVersion}`),
    delete: (o) => events.push(`delete ${o.metadata.name}`),
    malformed: (ref, f) => events.push(`malformed ${ref.name} ${f ? f.fieldPath : 'gone'}`),
  });
  return { lw, informer, events, sleeps, lines };
}

describe('Informer', () => {
  it('lists, syncs, then applies watch events from the list resourceVersion', async () => {
    const { lw, informer, events } = setup();
    lw.lists.push({ items: [cm('a', '1'), cm('b', '2')], resourceVersion: '10' });
    informer.start();
    await expect(informer.waitForSync()).resolves.toBe(true);
    const w = await lw.watching();
    expect(w.req.resourceVersion).toBe('10');
    w.req.onEvent('MODIFIED', cm('a', '11', { k: 'v' }));
    w.req.onEvent('DELETED', cm('b', '12'));
    w.req.onEvent('BOOKMARK', { metadata: { resourceVersion: '15' } });
    expect(events).toEqual(['add a@1', 'add b@2', 'update a 1->11', 'delete b']);
    expect(informer.get('ns', 'a')?.data).toEqual({ k: 'v' });
    expect(informer.list('ns').map((o) => o.metadata.name)).toEqual(['a']);
    expect(informer.lastSyncResourceVersion).toBe('15');
    await informer.stop();
  });

  it('hands out frozen objects', async () => {
    const { lw, informer } = setup();
    lw.lists.push({ items: [cm('a', '1', { k: 'v' })], resourceVersion: '1' });
    informer.start();
    await informer.waitForSync();
    const a = informer.get('ns', 'a');
    expect(Object.isFrozen(a)).toBe(true);
    expect(Object.isFrozen(a?.data)).toBe(true);
    await informer.stop();
  });

  it('resumes from the last resourceVersion after a clean end, without relisting', async () => {
    const { lw, informer } = setup();
    lw.lists.push({ items: [], resourceVersion: '5' });
    informer.start();
    const w1 = await lw.watching();
    w1.req.onEvent('ADDED', cm('a', '7'));
    w1.end('ended');
    await lw.watching();
    expect(lw.watchRvs).toEqual(['5', '7']);
    expect(lw.listCalls).toBe(1);
    await informer.stop();
  });

  it('relists on 410 Gone and fires deletes for objects that vanished meanwhile', async () => {
    const { lw, informer, events } = setup();
    lw.lists.push({ items: [cm('a', '1'), cm('b', '2')], resourceVersion: '3' });
    lw.lists.push({ items: [cm('a', '1'), cm('c', '9')], resourceVersion: '20' });
    informer.start();
    (await lw.watching()).end('gone');
    await lw.watching();
    expect(lw.watchRvs).toEqual(['3', '20']);
    // a unchanged (same resourceVersion): no event; b gone; c new.
    expect(events).toEqual(['add a@1', 'add b@2', 'add c@9', 'delete b']);
    await informer.stop();
  });

  it('restarts with doubling backoff on errors, capped, and resets it on an event', async () => {
    const { lw, informer, sleeps } = setup();
    lw.lists.push(new Error('connection refused'), new Error('connection refused'));
    lw.lists.push({ items: [], resourceVersion: '1' });
    informer.start();
    for (let i = 0; i < 6; i++) (await lw.watching()).fail(new WatchFailedError('boom', 500));
    const w = await lw.watching();
    expect(sleeps).toEqual([1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
    w.req.onEvent('ADDED', cm('a', '2'));
    w.fail(new WatchFailedError('boom', 500));
    await lw.watching();
    expect(sleeps.at(-1)).toBe(1000);
    expect(lw.listCalls).toBe(3);
    expect(lw.watchRvs.at(-1)).toBe('2');
    await informer.stop();
  });

  it('skips a malformed object, logs it once per resourceVersion naming the field, keeps running', async () => {
    const { lw, informer, events, lines } = setup();
    const bad = { ...(cm('bad', '1') as object), data: { n: 5 } };
    lw.lists.push({ items: [cm('a', '1'), bad], resourceVersion: '2' });
    lw.lists.push({ items: [cm('a', '1'), bad], resourceVersion: '3' });
    informer.start();
    await informer.waitForSync();
    (await lw.watching()).end('gone');
    const w = await lw.watching();
    expect(informer.get('ns', 'bad')).toBeUndefined();
    expect(informer.malformedObject('ns', 'bad')?.fieldPath).toBe('data.n');
    const logged = lines.filter((l) => l.msg === 'malformed object skipped');
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ name: 'bad', namespace: 'ns', fieldPath: 'data.n' });
    w.req.onEvent('MODIFIED', cm('bad', '4', { n: 'ok' }));
    expect(informer.get('ns', 'bad')).toBeDefined();
    expect(informer.malformedObject('ns', 'bad')).toBeUndefined();
    expect(events).toEqual(['add a@1', 'malformed bad data.n', 'add bad@4']);
    await informer.stop();
  });

  it('reports a malformed object that is deleted', async () => {
    const { lw, informer, events } = setup();
    lw.lists.push({ items: [{ ...(cm('bad', '1') as object), data: 'x' }], resourceVersion: '2' });
    informer.start();
    const w = await lw.watching();
    w.req.onEvent('DELETED', { ...(cm('bad', '3') as object), data: 'x' });
    expect(events).toEqual(['malformed bad data', 'malformed bad gone']);
    await informer.stop();
  });

  it('keeps going when a handler throws', async () => {
    const { lw, informer, events } = setup();
    informer.on({
      add: () => {
        throw new Error('handler bug');
      },
    });
    lw.lists.push({ items: [cm('a', '1'), cm('b', '1')], resourceVersion: '2' });
    informer.start();
    await informer.waitForSync();
    expect(events).toEqual(['add a@1', 'add b@1']);
    await informer.stop();
  });

  it('waitForSync gives up when its signal aborts', async () => {
    const { informer } = setup();
    const ac = new AbortController();
    const p = informer.waitForSync(ac.signal);
    ac.abort();
    await expect(p).resolves.toBe(false);
    expect(informer.hasSynced()).toBe(false);
  });
});
