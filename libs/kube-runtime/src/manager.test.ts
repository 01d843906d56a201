import { Counter, Registry } from 'prom-client';
import { Agent, request } from 'undici';
import { eventually } from '@sandbox-scale/e2e';
import { Manager, type Cache } from './manager';
import { isRunnableFailed, isShutdownTimeout } from './manager-errors';
import { LeaderElector } from './leader/leader-elector';
import { MemoryLease } from './testing/memory-lease';
import type { Runnable } from './runnable';
import { captureLog } from './testing/capture-log';
import { SyncGate } from './informer/sync-gate';

const soon = { timeoutMs: 5_000, intervalMs: 5 };

class FakeCache implements Cache {
  readonly gate = new SyncGate();
  constructor(
    readonly name: string,
    private readonly trail: string[],
  ) {}
  start(): void {
    this.trail.push(`cache ${this.name} start`);
  }
  async stop(): Promise<void> {
    this.trail.push(`cache ${this.name} stop`);
  }
  hasSynced(): boolean {
    return this.gate.done;
  }
  waitForSync(signal?: AbortSignal): Promise<boolean> {
    return this.gate.wait(signal);
  }
}

/** `failAfter`: fails once the trail holds that entry (another runnable has started). */
function runnable(
  name: string,
  trail: string[],
  opts: { needLeaderElection?: boolean; failAfter?: string; hang?: boolean } = {},
): Runnable {
  return {
    name,
    needLeaderElection: opts.needLeaderElection,
    async start(signal) {
      trail.push(`${name} start`);
      const failAfter = opts.failAfter;
      if (failAfter !== undefined) {
        await eventually(() => expect(trail).toContain(failAfter), soon);
        throw new Error('kaput');
      }
      await new Promise<void>((r) => signal.addEventListener('abort', () => r(), { once: true }));
      if (opts.hang) await new Promise(() => undefined);
      trail.push(`${name} stop`);
    },
    async drain() {
      trail.push(`${name} drain`);
    },
  };
}

function manager(trail: string[], extra: Partial<ConstructorParameters<typeof Manager>[0]> = {}): Manager {
  return new Manager({ log: captureLog().log, registry: new Registry(), healthProbeBindAddress: '127.0.0.1:0', ...extra });
}

describe('Manager', () => {
  it('starts caches, waits for sync (readyz names the laggard), then runnables; stops in reverse', async () => {
    const trail: string[] = [];
    const cache = new FakeCache('sandboxwarmpools', trail);
    const mgr = manager(trail)
      .addInformer(cache)
      .add(runnable('ctrl', trail))
      .add(runnable('publisher', trail, { needLeaderElection: false }));
    const stop = new AbortController();
    const done = mgr.start(stop.signal);
    await eventually(() => expect(trail).toEqual(['cache sandboxwarmpools start']), soon);
    const port = await eventually(() => {
      const bound = mgr.boundPorts[0];
      if (bound === undefined) throw new Error('probe server not bound yet');
      return bound;
    }, soon);
    const notReady = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(notReady.status).toBe(503);
    expect(await notReady.text()).toContain('informer:sandboxwarmpools');
    expect(trail).toEqual(['cache sandboxwarmpools start']);
    cache.gate.open();
    await eventually(() => expect(trail.slice(1)).toEqual(['publisher start', 'ctrl start']), soon);
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
    stop.abort();
    await done;
    expect(trail.slice(3)).toEqual(['publisher stop', 'ctrl stop', 'ctrl drain', 'publisher drain', 'cache sandboxwarmpools stop']);
  });

  it('starts leader-only runnables once the Lease is won and releases it after they stopped', async () => {
    const trail: string[] = [];
    const store = new MemoryLease();
    const registry = new Registry();
    const leading = async (): Promise<number | undefined> =>
      (await registry.getSingleMetric('sandbox_scale_leader')?.get())?.values.find((v) => v.labels['lease'] === 'lock')?.value;
    const mgr = manager(trail, {
      registry,
      leaderElection: { namespace: 'ns', name: 'lock', retryPeriodMs: 20, renewDeadlineMs: 200, leaseDurationMs: 1000 },
      electorFactory: (o) => new LeaderElector({ ...o, identity: 'me' }, store.clientFor()),
    }).add(runnable('ctrl', trail));
    const stop = new AbortController();
    const done = mgr.start(stop.signal);
    await eventually(() => expect(trail).toEqual(['ctrl start']), soon);
    expect(mgr.isLeader()).toBe(true);
    expect(store.lease?.spec?.holderIdentity).toBe('me');
    expect(await leading()).toBe(1);
    stop.abort();
    await done;
    expect(trail).toEqual(['ctrl start', 'ctrl stop', 'ctrl drain']);
    expect(store.lease?.spec?.holderIdentity).toBe('');
    expect(await leading()).toBe(0);
  });

  it('hands the Lease over once leader-only work has stopped, before the other runnables drain', async () => {
    const trail: string[] = [];
    const store = new MemoryLease();
    let openDrain = (): void => undefined;
    const drained = new Promise<void>((r) => (openDrain = r));
    const records: Runnable = {
      name: 'records',
      needLeaderElection: false,
      start: (signal) => new Promise<void>((r) => signal.addEventListener('abort', () => r(), { once: true })),
      drain: async () => {
        trail.push(`records drain (lease held by "${store.lease?.spec?.holderIdentity}")`);
        await drained;
      },
    };
    const mgr = manager(trail, {
      leaderElection: { namespace: 'ns', name: 'lock', retryPeriodMs: 20, renewDeadlineMs: 200, leaseDurationMs: 1000 },
      electorFactory: (o) => new LeaderElector({ ...o, identity: 'me' }, store.clientFor()),
    })
      .add(runnable('ctrl', trail))
      .add(records);
    const stop = new AbortController();
    const done = mgr.start(stop.signal);
    await eventually(() => expect(trail).toEqual(['ctrl start']), soon);
    stop.abort();
    await eventually(() => expect(trail).toContain('records drain (lease held by "")'), soon);
    expect(trail).toEqual(['ctrl start', 'ctrl stop', 'ctrl drain', 'records drain (lease held by "")']);
    openDrain();
    await done;
  });

  it('steps down on request: leader-only work stops and the Lease is released while the rest runs on', async () => {
    const trail: string[] = [];
    const store = new MemoryLease();
    const mgr = manager(trail, {
      leaderElection: { namespace: 'ns', name: 'lock', retryPeriodMs: 20, renewDeadlineMs: 200, leaseDurationMs: 1000 },
      electorFactory: (o) => new LeaderElector({ ...o, identity: 'me' }, store.clientFor()),
    })
      .add(runnable('ctrl', trail))
      .add(runnable('fast-path', trail, { needLeaderElection: false }));
    const stop = new AbortController();
    const done = mgr.start(stop.signal);
    await eventually(() => expect(trail).toEqual(['fast-path start', 'ctrl start']), soon);
    await Promise.all([mgr.stepDown(), mgr.stepDown()]);
    expect(trail).toEqual(['fast-path start', 'ctrl start', 'ctrl stop', 'ctrl drain']);
    expect(store.lease?.spec?.holderIdentity).toBe('');
    expect(mgr.isLeader()).toBe(false);
    stop.abort();
    await done;
    expect(trail.slice(4)).toEqual(['fast-path stop', 'fast-path drain']);
    // nothing took the Lease again after the step down
    expect(store.lease?.spec?.holderIdentity).toBe('');
  });

  it('stops everything and reports a runnable that failed', async () => {
    const trail: string[] = [];
    const mgr = manager(trail)
      .add(runnable('ok', trail))
      .add(runnable('bad', trail, { failAfter: 'ok start' }));
    const err = await mgr.start(new AbortController().signal).catch((e: unknown) => e);
    expect(isRunnableFailed(err)).toBe(true);
    expect(trail).toContain('ok stop');
  });

  it('gives up on a shutdown that exceeds its timeout', async () => {
    const trail: string[] = [];
    const mgr = manager(trail, { gracefulShutdownTimeoutMs: 50 }).add(runnable('stuck', trail, { hang: true }));
    const stop = new AbortController();
    const done = mgr.start(stop.signal).catch((e: unknown) => e);
    await eventually(() => expect(trail).toEqual(['stuck start']), soon);
    stop.abort();
    expect(isShutdownTimeout(await done)).toBe(true);
  });

  describe('probe and metrics listeners', () => {
    const registry = new Registry();
    new Counter({ name: 'sandbox_scale_mgr_test_total', help: 'x', registers: [registry] }).inc();
    // any token authenticates as `scraper`, who may get /metrics; the listener's answers are what is tested
    const auth = {
      authenticateToken: async (token: string) => (token === 'good' ? { username: 'scraper', groups: [], extra: {} } : undefined),
      authorize: async () => ({ allowed: true, reason: '' }),
    };
    const insecure = new Agent({ connect: { rejectUnauthorized: false } });
    afterAll(() => insecure.close());

    async function started(extra: Partial<ConstructorParameters<typeof Manager>[0]>): Promise<{ mgr: Manager; stop: () => Promise<void> }> {
      const mgr = new Manager({ log: captureLog().log, registry, ...extra });
      const ac = new AbortController();
      const done = mgr.start(ac.signal);
      const want = [extra.metricsBindAddress, extra.healthProbeBindAddress].filter((a) => a !== undefined && a !== '0').length;
      await eventually(() => expect(mgr.boundPorts).toHaveLength(want), soon);
      return {
        mgr,
        stop: async () => {
          ac.abort();
          await done;
        },
      };
    }

    it('delegated (the default): probes over plain HTTP on their port, /metrics over HTTPS behind the token on its own', async () => {
      const { mgr, stop } = await started({
        healthProbeBindAddress: '127.0.0.1:0',
        metricsBindAddress: '127.0.0.1:0',
        metricsAuthenticator: auth,
      });
      try {
        const [probePort, metricsPort] = mgr.boundPorts;
        expect((await fetch(`http://127.0.0.1:${probePort}/healthz`)).status).toBe(200);
        expect((await fetch(`http://127.0.0.1:${probePort}/metrics`)).status).toBe(404);
        const scrape = async (token?: string): Promise<{ status: number; body: string }> => {
          const r = await request(`https://127.0.0.1:${metricsPort}/metrics`, {
            dispatcher: insecure,
            headers: token ? { authorization: `Bearer ${token}` } : {},
          });
          return { status: r.statusCode, body: await r.body.text() };
        };
        expect((await scrape()).status).toBe(401);
        const ok = await scrape('good');
        expect(ok.status).toBe(200);
        expect(ok.body).toContain('sandbox_scale_mgr_test_total 1');
      } finally {
        await stop();
      }
    });

    it('none: /metrics over plain HTTP to anyone', async () => {
      const { mgr, stop } = await started({ metricsBindAddress: '127.0.0.1:0', metricsAuth: 'none' });
      try {
        const r = await fetch(`http://127.0.0.1:${mgr.boundPorts[0]}/metrics`);
        expect(r.status).toBe(200);
        expect(await r.text()).toContain('sandbox_scale_mgr_test_total 1');
      } finally {
        await stop();
      }
    });

    it('refuses delegated metrics without a kubeConfig, and a certificate without its key', () => {
      expect(() => new Manager({ log: captureLog().log, registry, metricsBindAddress: ':0' })).toThrow(/needs a kubeConfig/);
      expect(() => new Manager({ log: captureLog().log, registry, metricsAuthenticator: auth, metricsTlsCertFile: '/tls.crt' })).toThrow(
        /go together/,
      );
    });
  });
});
