import { z } from 'zod';
import { controller } from './builder';
import { ConfigMapResource } from './client/resource';
import { Informer } from './informer/informer';
import { FakeListWatcher, cm } from './testing/fake-list-watcher';
import { generationChanged } from './predicate/predicate';
import type { ReconcileRequest } from './reconcile/reconciler';
import { captureLog } from './testing/capture-log';
import { FakeClock, settle } from './testing/fake-clock';

const Schema = z.object({
  metadata: z.object({ name: z.string(), namespace: z.string(), resourceVersion: z.string(), generation: z.number().optional() }),
  data: z.record(z.string(), z.string()).optional(),
});
type Obj = z.infer<typeof Schema>;

function informerWith(items: unknown[]) {
  const { log } = captureLog();
  const lw = new FakeListWatcher();
  lw.lists.push({ items, resourceVersion: '1' });
  const informer = new Informer<Obj>({ resource: ConfigMapResource, parse: (o) => Schema.parse(o), log, listWatcher: lw });
  return { informer, lw };
}

describe('controller builder', () => {
  it('enqueues primaries (cached ones included), mapped watches and malformed primaries', async () => {
    const primary = informerWith([cm('p1', '1'), { ...(cm('broken', '1') as object), data: 7 }]);
    const other = informerWith([]);
    primary.informer.start();
    other.informer.start();
    await primary.informer.waitForSync();
    await other.informer.waitForSync();

    const seen: ReconcileRequest[] = [];
    const { log } = captureLog();
    const ctrl = controller({ name: 'demo', log, reconciler: { reconcile: async (req) => void seen.push(req) } })
      .for(primary.informer)
      .watches(other.informer, (o) => [{ namespace: 'ns', name: o.data?.owner ?? 'none' }])
      .build();
    const stop = new AbortController();
    const running = ctrl.start(stop.signal);
    await settle();
    expect(seen).toEqual([
      { namespace: 'ns', name: 'p1' },
      { namespace: 'ns', name: 'broken' },
    ]);
    (await other.lw.watching()).req.onEvent('ADDED', cm('x', '2', { owner: 'p1' }));
    await settle();
    expect(seen.at(-1)).toEqual({ namespace: 'ns', name: 'p1' });
    stop.abort();
    await running;
    await primary.informer.stop();
    await other.informer.stop();
  });

  it('filters updates through predicates', async () => {
    const withGen = (name: string, rv: string, generation: number): unknown => ({
      ...(cm(name, rv) as { metadata: object }),
      metadata: { name, namespace: 'ns', resourceVersion: rv, generation },
    });
    const src = informerWith([withGen('a', '1', 1)]);
    src.informer.start();
    await src.informer.waitForSync();
    const seen: string[] = [];
    const { log } = captureLog();
    const ctrl = controller({ name: 'gen', log, reconciler: { reconcile: async (req) => void seen.push(req.name) } })
      .for(src.informer, { predicates: [generationChanged()] })
      .build();
    const stop = new AbortController();
    const running = ctrl.start(stop.signal);
    await settle();
    const w = await src.lw.watching();
    w.req.onEvent('MODIFIED', withGen('a', '2', 1));
    await settle();
    w.req.onEvent('MODIFIED', withGen('a', '3', 2));
    await settle();
    expect(seen).toEqual(['a', 'a']);
    stop.abort();
    await running;
    await src.informer.stop();
  });

  it('drops the delayed requeue of a primary object that is deleted, and only its own', async () => {
    const src = informerWith([cm('a', '1'), cm('b', '1')]);
    src.informer.start();
    await src.informer.waitForSync();
    const clock = new FakeClock();
    const seen: string[] = [];
    const { log } = captureLog();
    const ctrl = controller({
      name: 'requeue',
      log,
      timers: clock,
      // a live object asks to be looked at again in a minute; a deleted one asks for nothing
      reconciler: {
        reconcile: async (req) => {
          seen.push(req.name);
          return src.informer.get(req.namespace, req.name) ? { requeueAfterMs: 60_000 } : undefined;
        },
      },
    })
      .for(src.informer)
      .build();
    const stop = new AbortController();
    const running = ctrl.start(stop.signal);
    await settle();
    expect(clock.timersPending).toBe(2);
    (await src.lw.watching()).req.onEvent('DELETED', cm('a', '2'));
    await settle();
    expect(seen).toEqual(['a', 'b', 'a']);
    expect(clock.timersPending).toBe(1);
    await clock.advance(60_000);
    expect(seen).toEqual(['a', 'b', 'a', 'b']);
    stop.abort();
    await running;
    await src.informer.stop();
  });

  it('refuses a controller without for()', () => {
    const { log } = captureLog();
    expect(() => controller({ name: 'x', log, reconciler: { reconcile: async () => undefined } }).build()).toThrow(/for\(\)/);
  });
});
