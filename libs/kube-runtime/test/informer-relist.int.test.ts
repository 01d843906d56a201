import { Registry } from 'prom-client';
import { type ControlPlane, eventually, startControlPlane } from '@sandbox-scale/e2e';
import { ConfigMapResource, Informer, KubeListWatcher, ResourceClient, parseUntyped, type ListWatcher } from '../src/index';
import { captureLog } from '../src/testing';

/**
 * 410 Gone needs a compacted etcd, which the shared control plane must not be subjected to
 * (other suites watch it). This suite starts its own: compaction every second, and no watch
 * cache for ConfigMaps so that old resourceVersions are answered by etcd itself.
 */
let cp: ControlPlane;

beforeAll(async () => {
  cp = await startControlPlane({
    controllerManager: false,
    apiserverArgs: ['--etcd-compaction-interval=1s', '--watch-cache-sizes=configmaps#0'],
  });
}, 120_000);
afterAll(async () => {
  await cp?.stop();
});

describe('Informer after compaction', () => {
  it('relists when its watch resourceVersion has been compacted away (410 Gone) and keeps up', async () => {
    const kc = cp.kubeConfig;
    const cms = new ResourceClient(kc, ConfigMapResource);
    for (let i = 0; i < 5; i++) await cms.create('default', { metadata: { name: `old-${i}` } });
    const real = new KubeListWatcher(kc, ConfigMapResource, { namespace: 'default' });
    // etcd has compacted: a watch from resourceVersion 1 (where the informer's first watch resumes) is answered 410 Gone.
    await eventually(
      async () => {
        const end = await real
          .watch({ resourceVersion: '1', onEvent: () => undefined, signal: AbortSignal.timeout(1_000) })
          .catch(() => 'no answer');
        expect(end).toBe('gone');
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );

    let lists = 0;
    let first = true;
    const staleOnce: ListWatcher = {
      list: (s) => {
        lists++;
        return real.list(s);
      },
      // As after a long partition: the first watch resumes from a resourceVersion etcd no longer has.
      watch: (req) => real.watch(first ? ((first = false), { ...req, resourceVersion: '1' }) : req),
    };
    const registry = new Registry();
    const informer = new Informer({
      resource: ConfigMapResource,
      namespace: 'default',
      parse: parseUntyped,
      log: captureLog().log,
      listWatcher: staleOnce,
      registry,
      backoff: { baseMs: 50, maxMs: 500 },
    });
    informer.start();
    try {
      await informer.waitForSync();
      await eventually(() => expect(lists).toBe(2), { timeoutMs: 10_000 });
      await cms.create('default', { metadata: { name: 'after-gone' } });
      await eventually(() => expect(informer.get('default', 'after-gone')).toBeDefined(), { timeoutMs: 10_000 });
      expect(informer.list('default').map((o) => o.metadata.name)).toEqual(expect.arrayContaining(['old-0', 'old-4', 'after-gone']));
      expect(await registry.getSingleMetricAsString('sandbox_scale_informer_watch_restarts_total')).toContain('reason="gone"} 1');
    } finally {
      await informer.stop();
    }
  });
});
