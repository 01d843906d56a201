import { Registry } from 'prom-client';
import { EventRecorder, involvedObjectOf } from './event-recorder';
import type { EventBody, EventSeries, EventSink } from './event-sink';
import { FakeClock, settle } from '../testing/fake-clock';
import { captureLog } from '../testing/capture-log';

class MemorySink implements EventSink {
  created: EventBody[] = [];
  series: Array<{ name: string; series: EventSeries }> = [];
  async create(e: EventBody): Promise<void> {
    this.created.push(e);
  }
  async patchSeries(_ns: string, name: string, series: EventSeries): Promise<void> {
    this.series.push({ name, series });
  }
}

const pool = involvedObjectOf({
  apiVersion: 'agents.x-k8s.io/v1alpha1',
  kind: 'SandboxWarmPool',
  metadata: { name: 'p', namespace: 'ns', uid: 'u1' },
});

function setup(opts: { burst?: number } = {}) {
  const clock = new FakeClock();
  const sink = new MemorySink();
  const registry = new Registry();
  const rec = new EventRecorder(sink, {
    reportingController: 'sandbox-scale/test',
    reportingInstance: 'i1',
    log: captureLog().log,
    timers: clock,
    registry,
    ...opts,
  });
  return { clock, sink, rec, registry };
}

describe('EventRecorder', () => {
  it('writes a well-formed events.k8s.io/v1 Event for the involved object', async () => {
    const { sink, rec } = setup();
    rec.record(pool, { type: 'Warning', reason: 'TemplateUnreadable', action: 'Reconcile', note: 'template t1 not found' });
    await settle();
    expect(sink.created).toHaveLength(1);
    expect(sink.created[0]).toMatchObject({
      apiVersion: 'events.k8s.io/v1',
      metadata: { namespace: 'ns' },
      reportingController: 'sandbox-scale/test',
      reportingInstance: 'i1',
      type: 'Warning',
      reason: 'TemplateUnreadable',
      regarding: { kind: 'SandboxWarmPool', name: 'p', uid: 'u1' },
    });
    expect(sink.created[0]?.eventTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  });

  it('turns a hot loop of the same event into one Event and a series count written once per interval', async () => {
    const { clock, sink, rec } = setup();
    for (let i = 0; i < 1000; i++)
      rec.record(pool, { type: 'Warning', reason: 'PushFailed', action: 'PushTargets', note: 'node n1 unreachable' });
    await clock.advance(29_000);
    expect(sink.created).toHaveLength(1);
    expect(sink.series).toHaveLength(0);
    await clock.advance(1000);
    expect(sink.series).toEqual([{ name: sink.created[0]?.metadata.name, series: { count: 1000, lastObservedTime: expect.any(String) } }]);
    await clock.advance(120_000);
    expect(sink.series).toHaveLength(1);
  });

  it('rate limits distinct events about one object', async () => {
    const { clock, sink, rec, registry } = setup({ burst: 5 });
    for (let i = 0; i < 50; i++) rec.record(pool, { type: 'Normal', reason: 'Scaled', action: 'Scale', note: `to ${i}` });
    await clock.advance(1);
    expect(sink.created).toHaveLength(5);
    const m = await registry.getSingleMetricAsString('sandbox_scale_events_total');
    expect(m).toContain('outcome="dropped"} 45');
  });

  it('flushes outstanding counts on stop', async () => {
    const { sink, rec } = setup();
    rec.record(pool, { type: 'Normal', reason: 'R', action: 'A' });
    rec.record(pool, { type: 'Normal', reason: 'R', action: 'A' });
    await settle();
    await rec.stop();
    expect(sink.series.map((s) => s.series.count)).toEqual([2]);
  });
});

describe('event names', () => {
  it('stay valid DNS subdomains for an object whose name is already 253 characters', async () => {
    const { sink, rec } = setup();
    const long = involvedObjectOf({
      apiVersion: 'v1',
      kind: 'X',
      metadata: { name: `${'a'.repeat(235)}.${'b'.repeat(17)}`, namespace: 'ns', uid: 'u' },
    });
    rec.record(long, { type: 'Normal', reason: 'R', action: 'A', note: 'n' });
    await settle();
    const name = sink.created[0]?.metadata.name ?? '';
    expect(name.length).toBeLessThanOrEqual(253);
    expect(name).toMatch(/^a{235}\.[0-9a-f]{16}$/);
  });
});
