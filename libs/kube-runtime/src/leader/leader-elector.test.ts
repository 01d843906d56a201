import { defaultIdentity, type LeaderElectionTimings, LeaderElector } from './leader-elector';
import { MemoryLease } from '../testing/memory-lease';
import { FakeClock, settle } from '../testing/fake-clock';
import { captureLog } from '../testing/capture-log';

function candidate(store: MemoryLease, clock: FakeClock, identity: string, timings: LeaderElectionTimings = {}) {
  const { log } = captureLog();
  const events: string[] = [];
  let leadership: AbortSignal | undefined;
  const elector = new LeaderElector(
    {
      namespace: 'ns',
      name: 'lock',
      identity,
      ...timings,
      log,
      now: clock.now,
      sleep: clock.sleep,
      onStartedLeading: (s) => {
        leadership = s;
        events.push('started');
      },
      onStoppedLeading: () => events.push('stopped'),
    },
    store.clientFor(),
  );
  const stop = new AbortController();
  const done = elector.run(stop.signal);
  return { elector, events, stop, done, leadership: () => leadership };
}

describe('LeaderElector', () => {
  it('lets exactly one candidate lead; a stopped leader releases and the standby takes over at once', async () => {
    const clock = new FakeClock();
    const store = new MemoryLease();
    const a = candidate(store, clock, 'a');
    await settle();
    const b = candidate(store, clock, 'b');
    await clock.advance(20_000);
    expect(a.elector.isLeader()).toBe(true);
    expect(b.elector.isLeader()).toBe(false);
    expect(store.lease?.spec?.holderIdentity).toBe('a');

    a.stop.abort();
    await expect(a.done).resolves.toBe('stopped');
    expect(a.events).toEqual(['started', 'stopped']);
    expect(a.leadership()?.aborted).toBe(true);
    expect(store.lease?.spec?.holderIdentity).toBe('');
    await clock.advance(3000);
    expect(b.elector.isLeader()).toBe(true);
    expect(store.lease?.spec?.leaseTransitions).toBe(1);
    b.stop.abort();
    await b.done;
  });

  it('takes over from a leader that vanished only after the lease duration', async () => {
    const clock = new FakeClock();
    const store = new MemoryLease();
    store.lease = {
      metadata: { name: 'lock', namespace: 'ns', resourceVersion: '1' },
      spec: { holderIdentity: 'ghost', leaseDurationSeconds: 15, renewTime: '2020-01-01T00:00:00.000000Z', leaseTransitions: 3 },
    };
    const b = candidate(store, clock, 'b');
    await clock.advance(14_000);
    expect(b.elector.isLeader()).toBe(false);
    await clock.advance(4000);
    expect(b.elector.isLeader()).toBe(true);
    expect(store.lease?.spec?.leaseTransitions).toBe(4);
    b.stop.abort();
    await b.done;
  });

  it('tries at the moment the lease it saw runs out, not a retry period later', async () => {
    const clock = new FakeClock();
    const store = new MemoryLease();
    store.lease = {
      metadata: { name: 'lock', namespace: 'ns', resourceVersion: '1' },
      spec: { holderIdentity: 'ghost', leaseDurationSeconds: 15, renewTime: '2020-01-01T00:00:00.000000Z', leaseTransitions: 0 },
    };
    // a retry period that does not divide the lease: tries at 0, 4.x, 8.x, 12.x s would next come after 16 s
    const b = candidate(store, clock, 'b', { retryPeriodMs: 4000 });
    await clock.advance(14_999);
    expect(b.elector.isLeader()).toBe(false);
    await clock.advance(1);
    expect(b.elector.isLeader()).toBe(true);
    b.stop.abort();
    await b.done;
  });

  it('waits out a lease the holder keeps renewing, whatever its own retry period', async () => {
    const clock = new FakeClock();
    const store = new MemoryLease();
    const a = candidate(store, clock, 'a', { retryPeriodMs: 2000 });
    await settle();
    const b = candidate(store, clock, 'b', { retryPeriodMs: 4000 });
    await clock.advance(60_000);
    expect(a.elector.isLeader()).toBe(true);
    expect(b.elector.isLeader()).toBe(false);
    expect(store.lease?.spec?.leaseTransitions ?? 0).toBe(0);
    a.stop.abort();
    b.stop.abort();
    await Promise.all([a.done, b.done]);
  });

  it('renews every retry period and stops leading when renewals fail past the renew deadline', async () => {
    const clock = new FakeClock();
    const store = new MemoryLease();
    const a = candidate(store, clock, 'a');
    await clock.advance(10_000);
    const writes = store.writes;
    await clock.advance(10_000);
    expect(store.writes - writes).toBe(5);
    store.failing = true;
    await clock.advance(9000);
    expect(a.elector.isLeader()).toBe(true);
    await clock.advance(4000);
    await expect(a.done).resolves.toBe('lost');
    expect(a.events).toEqual(['started', 'stopped']);
    expect(a.leadership()?.aborted).toBe(true);
  });
});

describe('defaultIdentity', () => {
  it('names the pod when POD_NAME is set, with a suffix that keeps two processes apart', () => {
    const a = defaultIdentity({ POD_NAME: 'sandbox-scale-claim-controller-7d9f-abcde' });
    const b = defaultIdentity({ POD_NAME: 'sandbox-scale-claim-controller-7d9f-abcde' });
    expect(a).toMatch(/^sandbox-scale-claim-controller-7d9f-abcde_[0-9a-f]{8}$/);
    expect(a).not.toBe(b);
    expect(defaultIdentity({})).not.toMatch(/^_/);
  });
});
