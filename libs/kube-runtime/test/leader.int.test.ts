import { createTestNamespace, deleteNamespace, eventually, testKubeConfig } from '@sandbox-scale/e2e';
import { LeaseResource, LeaseSchema, ResourceClient, createLeaderElector, type LeaderElector } from '../src/index';
import { captureLog } from '../src/testing';

const kc = testKubeConfig();
let ns: string;

beforeAll(async () => {
  ns = await createTestNamespace(kc, 'kr-leader');
});
afterAll(async () => {
  await deleteNamespace(kc, ns);
});

const timings = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 200 };

interface Candidate {
  elector: LeaderElector;
  stop: AbortController;
  done: Promise<'lost' | 'stopped'>;
  leading: () => boolean;
}

function candidate(identity: string, leaseName: string): Candidate {
  let leading = false;
  const elector = createLeaderElector(kc, {
    namespace: ns,
    name: leaseName,
    identity,
    log: captureLog().log,
    ...timings,
    onStartedLeading: (signal) => {
      leading = true;
      signal.addEventListener('abort', () => (leading = false));
    },
  });
  const stop = new AbortController();
  return { elector, stop, done: elector.run(stop.signal), leading: () => leading };
}

async function leaseSpec(name: string) {
  return LeaseSchema.parse(await new ResourceClient(kc, LeaseResource).get(ns, name)).spec;
}

async function holder(name: string): Promise<string | null | undefined> {
  return (await leaseSpec(name))?.holderIdentity;
}

describe('leader election on a real Lease', () => {
  it('elects one of two candidates; when the leader stops, the other takes over', async () => {
    const a = candidate('a', 'lock');
    const b = candidate('b', 'lock');
    const first = await eventually(
      () => {
        const leaders = [a, b].filter((c) => c.leading());
        if (leaders.length !== 1) throw new Error(`${leaders.length} leaders`);
        return leaders[0] as Candidate;
      },
      { timeoutMs: 10_000 },
    );
    const [leader, standby] = first === a ? [a, b] : [b, a];
    expect(await holder('lock')).toBe(leader.elector.identity);
    // Standby stays standby across several renewals: three renewTimes of the leader seen.
    const renewals = new Set<string>();
    await eventually(
      async () => {
        renewals.add((await leaseSpec('lock'))?.renewTime ?? '');
        expect(renewals.size).toBeGreaterThanOrEqual(3);
      },
      { timeoutMs: 10_000, intervalMs: 50 },
    );
    expect(standby.leading()).toBe(false);

    leader.stop.abort();
    await expect(leader.done).resolves.toBe('stopped');
    // Released, not left to expire: once the leader has stopped, the Lease no longer names it.
    expect(await holder('lock')).not.toBe(leader.elector.identity);
    await eventually(() => expect(standby.leading()).toBe(true), { timeoutMs: 10_000 });
    expect(await holder('lock')).toBe(standby.elector.identity);
    standby.stop.abort();
    await standby.done;
  });

  it('takes over from a leader that vanished without releasing, once the lease expires', async () => {
    const a = candidate('a', 'crash');
    await eventually(() => expect(a.leading()).toBe(true), { timeoutMs: 10_000 });
    const leases = new ResourceClient(kc, LeaseResource);
    a.stop.abort();
    await a.done;
    // Leave the Lease as a crashed leader would: held by someone who never renews again.
    const lease = LeaseSchema.parse(await leases.get(ns, 'crash'));
    await leases.replace(ns, 'crash', { ...lease, spec: { ...lease.spec, holderIdentity: 'ghost', leaseDurationSeconds: 3 } });
    const b = candidate('b', 'crash');
    await eventually(() => expect(b.leading()).toBe(true), { timeoutMs: 10_000 });
    // Taken once the ghost's lease ran out, as the Lease records it: acquired no sooner than
    // 3 s (its leaseDurationSeconds) after the ghost's last renewal, as one more transition.
    const won = await leaseSpec('crash');
    expect(won?.holderIdentity).toBe('b');
    expect(Date.parse(won?.acquireTime ?? '') - Date.parse(lease.spec?.renewTime ?? '')).toBeGreaterThanOrEqual(3_000);
    expect(won?.leaseTransitions).toBe((lease.spec?.leaseTransitions ?? 0) + 1);
    b.stop.abort();
    await b.done;
  });
});
