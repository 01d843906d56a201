import { createLogger } from '@sandbox-scale/kube-runtime';
import type { Assignment, ClaimTarget } from '../gateway/assignment';
import { RecordQueue, type BoundRecorder } from './record-queue';
import { ClaimBoundElsewhereError } from './record-errors';

const log = createLogger({ name: 'test', level: 'silent' });
const a: Assignment = { claimId: 'sb_1', node: 'n1', address: '10.0.0.5:7777', token: 'tok' };
const noSleep = async (): Promise<void> => undefined;

describe('RecordQueue', () => {
  it('retries a failing record with backoff until it lands, and drain waits for it', async () => {
    const seen: string[] = [];
    let failures = 2;
    const recorder: BoundRecorder = {
      recordBound: async (t: ClaimTarget) => {
        if (failures-- > 0) throw new Error('apiserver unavailable');
        seen.push(`${t.namespace}/${t.name}`);
      },
    };
    const outcomes: string[] = [];
    const q = new RecordQueue({ recorder, log, attempts: 5, sleep: noSleep, onOutcome: (o) => outcomes.push(o) });
    q.enqueue({ namespace: 'ns', name: 'c1' }, a);
    await q.drain();
    expect(seen).toEqual(['ns/c1']);
    expect(outcomes).toEqual(['recorded']);
  });

  it('gives up after the attempts and leaves the orphan, counted as failed', async () => {
    let calls = 0;
    const recorder: BoundRecorder = {
      recordBound: async () => {
        calls++;
        throw new Error('forbidden');
      },
    };
    const outcomes: string[] = [];
    const q = new RecordQueue({ recorder, log, attempts: 3, sleep: noSleep, onOutcome: (o) => outcomes.push(o) });
    q.enqueue({ namespace: 'ns', name: 'c1' }, a);
    await q.drain();
    expect(calls).toBe(3);
    expect(outcomes).toEqual(['failed']);
  });

  it('never runs more records at once than its concurrency', async () => {
    let running = 0;
    let peak = 0;
    const recorder: BoundRecorder = {
      recordBound: async () => {
        running++;
        peak = Math.max(peak, running);
        await new Promise((r) => setImmediate(r));
        running--;
      },
    };
    const q = new RecordQueue({ recorder, log, concurrency: 3 });
    for (let i = 0; i < 20; i++) q.enqueue({ namespace: 'ns', name: `c${i}` }, a);
    await q.close();
    expect(peak).toBe(3);
    expect(q.pending).toBe(0);
  });

  it('refuses records after close, leaving them to the orphan pass', async () => {
    let calls = 0;
    const q = new RecordQueue({
      recorder: {
        recordBound: async () => {
          calls++;
        },
      },
      log,
    });
    await q.close();
    q.enqueue({ namespace: 'ns', name: 'late' }, a);
    await q.drain();
    expect(calls).toBe(0);
  });
});

describe('RecordQueue bounds', () => {
  it('leaves a record to the orphan pass when full, instead of holding it or blocking', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const outcomes: string[] = [];
    const q = new RecordQueue({
      recorder: { recordBound: () => gate },
      log,
      concurrency: 1,
      maxPending: 2,
      onOutcome: (o, t) => outcomes.push(`${o} ${t.name}`),
    });
    expect(q.enqueue({ namespace: 'ns', name: 'c1' }, a)).toBe(true);
    expect(q.enqueue({ namespace: 'ns', name: 'c2' }, a)).toBe(true);
    expect(q.enqueue({ namespace: 'ns', name: 'c3' }, a)).toBe(false);
    expect(q.pending).toBe(2);
    release();
    await q.drain();
    expect(outcomes).toEqual(['deferred c3', 'recorded c1', 'recorded c2']);
  });

  it('does not retry a record whose name belongs to another object', async () => {
    let calls = 0;
    const recorder = {
      recordBound: async () => {
        calls++;
        throw new ClaimBoundElsewhereError('bound to sb_other');
      },
    };
    const outcomes: string[] = [];
    const q = new RecordQueue({ recorder, log, attempts: 5, sleep: noSleep, onOutcome: (o) => outcomes.push(o) });
    q.enqueue({ namespace: 'ns', name: 'c1' }, a);
    await q.drain();
    expect(calls).toBe(1);
    expect(outcomes).toEqual(['refused']);
  });
});
