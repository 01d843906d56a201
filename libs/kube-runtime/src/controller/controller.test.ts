import { Registry } from 'prom-client';
import { Controller } from './controller';
import { TerminalError } from '../reconcile/terminal-error';
import type { ReconcileRequest, ReconcileResult } from '../reconcile/reconciler';
import { FakeClock, settle } from '../testing/fake-clock';
import { captureLog } from '../testing/capture-log';

type Step = ReconcileResult | Error;

function setup(script: Step[]) {
  const clock = new FakeClock();
  const registry = new Registry();
  const { log, lines } = captureLog();
  const calls: Array<{ req: ReconcileRequest; at: number; reconcileId: string }> = [];
  const ctrl = new Controller({
    name: 'demo',
    log,
    registry,
    timers: clock,
    reconciler: {
      async reconcile(req, ctx) {
        calls.push({ req, at: clock.now(), reconcileId: ctx.reconcileId });
        const step = script.shift() ?? {};
        if (step instanceof Error) throw step;
        return step;
      },
    },
  });
  const stop = new AbortController();
  const running = ctrl.start(stop.signal);
  const t0 = clock.now();
  return { clock, registry, lines, calls, ctrl, stop, running, t0 };
}

async function count(registry: Registry, result: string): Promise<number> {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === 'sandbox_scale_reconcile_total');
  return m?.values.find((v) => v.labels.result === result && v.labels.controller === 'demo')?.value ?? 0;
}

describe('Controller', () => {
  it('retries an error with per-key exponential backoff and logs each failure once with its reconcileId', async () => {
    const s = setup([new Error('boom'), new Error('boom'), new Error('boom'), {}]);
    s.ctrl.enqueue({ namespace: 'ns', name: 'a' });
    await s.clock.advance(100);
    expect(s.calls.map((c) => c.at - s.t0)).toEqual([0, 5, 15, 35]);
    const failures = s.lines.filter((l) => l.msg === 'reconcile failed; retrying with backoff');
    expect(failures.map((l) => l.retryInMs)).toEqual([5, 10, 20]);
    expect(new Set(failures.map((l) => l.reconcileId)).size).toBe(3);
    expect(failures[0]).toMatchObject({ controller: 'demo', namespace: 'ns', name: 'a', reconcileId: s.calls[0]?.reconcileId });
    expect(await count(s.registry, 'error')).toBe(3);
    expect(await count(s.registry, 'success')).toBe(1);
    s.stop.abort();
    await s.running;
  });

  it('requeues after the asked delay and resets the error backoff', async () => {
    const s = setup([new Error('x'), new Error('x'), { requeueAfterMs: 1000 }, new Error('x'), {}]);
    s.ctrl.enqueue({ namespace: '', name: 'cluster-thing' });
    await s.clock.advance(5000);
    // 0, +5 (backoff 5), +10 (backoff 10) -> requeue after 1000 -> error -> backoff restarts at 5.
    expect(s.calls.map((c) => c.at - s.t0)).toEqual([0, 5, 15, 1015, 1020]);
    expect(s.calls[0]?.req).toEqual({ namespace: '', name: 'cluster-thing' });
    expect(await count(s.registry, 'requeue_after')).toBe(1);
    s.stop.abort();
    await s.running;
  });

  it('counts a terminal error and does not retry it', async () => {
    const s = setup([new TerminalError('spec.size is not a size class')]);
    s.ctrl.enqueue({ namespace: 'ns', name: 'bad' });
    await s.clock.advance(10_000_000);
    expect(s.calls).toHaveLength(1);
    expect(await count(s.registry, 'terminal_error')).toBe(1);
    expect(s.lines.filter((l) => l.msg === 'reconcile failed terminally; not retrying')).toHaveLength(1);
    s.stop.abort();
    await s.running;
  });

  it('stops: the in-flight reconcile sees its signal aborted, pending retries are dropped', async () => {
    const clock = new FakeClock();
    const { log } = captureLog();
    let sawAbort = false;
    let calls = 0;
    const ctrl = new Controller({
      name: 'slow',
      log,
      timers: clock,
      reconciler: {
        reconcile: (_req, ctx) =>
          new Promise((resolve, reject) => {
            calls++;
            if (calls > 1) return reject(new Error('again'));
            ctx.signal.addEventListener('abort', () => {
              sawAbort = true;
              reject(new Error('aborted'));
            });
          }),
      },
    });
    const stop = new AbortController();
    const running = ctrl.start(stop.signal);
    ctrl.enqueue({ namespace: 'ns', name: 'a' });
    await settle();
    stop.abort();
    await running;
    await clock.advance(60_000);
    expect(sawAbort).toBe(true);
    expect(calls).toBe(1);
  });

  it('exposes the queue depth gauge', async () => {
    const s = setup([]);
    const m = await s.registry.getSingleMetricAsString('sandbox_scale_workqueue_depth');
    expect(m).toContain('sandbox_scale_workqueue_depth{controller="demo"} 0');
    s.stop.abort();
    await s.running;
  });
});
