import { allotReplicas } from '../targets/replica-limits';
import { desiredPoolStatus, invalidPoolStatus, poolEvents, sameRecordedKeys, statusDiffers, transitions } from './pool-status';

const now = new Date('2030-01-01T00:00:00Z');
const later = new Date('2030-01-01T00:05:00Z');
const obs = { name: 'p', generation: 3, replicas: 10, routableNodes: 2, now };

describe('desiredPoolStatus', () => {
  it('reports warm as replicas and readyReplicas, the selector, the generation, and Ready=False while warming', () => {
    const s = desiredPoolStatus({ ...obs, warm: 4 }, undefined);
    expect(s).toMatchObject({ replicas: 4, readyReplicas: 4, selector: 'agents.x-k8s.io/warm-pool=p', observedGeneration: 3 });
    expect(s.conditions?.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['Ready', 'False', 'PoolWarming'],
      ['Degraded', 'False', 'AsExpected'],
      ['ReplicasLimited', 'False', 'WithinLimits'],
    ]);
  });

  it('is Ready once warm reaches replicas, and keeps transition times while statuses hold', () => {
    const first = desiredPoolStatus({ ...obs, warm: 10 }, undefined);
    expect(first.conditions?.[0]).toMatchObject({ status: 'True', reason: 'PoolWarm', lastTransitionTime: '2030-01-01T00:00:00Z' });
    const again = desiredPoolStatus({ ...obs, warm: 12, now: later }, first);
    expect(again.conditions?.[0]?.lastTransitionTime).toBe('2030-01-01T00:00:00Z');
    expect(transitions(first, again)).toEqual([]);
    expect(statusDiffers(first, again)).toBe(true);
    expect(statusDiffers(again, desiredPoolStatus({ ...obs, warm: 12, now: later }, again))).toBe(false);
  });

  it('says NoRoutableNodes when no node can take targets', () => {
    const s = desiredPoolStatus({ ...obs, warm: 0, routableNodes: 0 }, undefined);
    expect(s.conditions?.[0]).toMatchObject({ status: 'False', reason: 'NoRoutableNodes' });
  });

  it('is Degraded with the problem reason, and that flip is a transition', () => {
    const ok = desiredPoolStatus({ ...obs, warm: 10 }, undefined);
    const bad = desiredPoolStatus({ ...obs, warm: 10, problem: { reason: 'TemplateNotFound', message: 'gone' }, now: later }, ok);
    expect(bad.conditions?.[1]).toMatchObject({
      type: 'Degraded',
      status: 'True',
      reason: 'TemplateNotFound',
      lastTransitionTime: '2030-01-01T00:05:00Z',
    });
    expect(transitions(ok, bad).map((c) => c.type)).toEqual(['Degraded']);
    // Still Degraded, for another reason: a transition too (the event says why now).
    const other = desiredPoolStatus({ ...obs, warm: 10, problem: { reason: 'PushFailed', message: 'node down' }, now: later }, bad);
    expect(transitions(bad, other).map((c) => [c.type, c.reason])).toEqual([['Degraded', 'PushFailed']]);
    expect(
      transitions(
        other,
        desiredPoolStatus({ ...obs, warm: 11, problem: { reason: 'PushFailed', message: 'two nodes down' }, now: later }, other),
      ),
    ).toEqual([]);
  });

  it('records the pool keys, and a key change is a difference even when nothing else changed', () => {
    const key = { template: 'img:a', net: 'none', size: 'small' };
    const first = desiredPoolStatus({ ...obs, warm: 10, poolKey: key }, undefined);
    expect(first.poolKey).toEqual(key);
    expect(first.retiringPoolKey).toBeUndefined();
    const moved = desiredPoolStatus({ ...obs, warm: 10, poolKey: { ...key, template: 'img:b' }, retiringPoolKey: key }, first);
    expect(moved.retiringPoolKey).toEqual(key);
    expect(sameRecordedKeys(first, moved)).toBe(false);
    expect(statusDiffers(first, moved)).toBe(true);
    expect(sameRecordedKeys(first, desiredPoolStatus({ ...obs, warm: 3, poolKey: key }, first))).toBe(true);
  });
});

describe('replica limits in the status', () => {
  const limits = { perPool: 64, perNamespace: 96 };
  const allot = (replicas: Record<string, number>) =>
    allotReplicas(
      Object.entries(replicas).map(([name, r], i) => ({
        id: `ns/${name}`,
        namespace: 'ns',
        name,
        replicas: r,
        createdAt: `2030-01-01T00:00:0${i}Z`,
      })),
      limits,
    );
  const condition = (s: ReturnType<typeof desiredPoolStatus>, type: string) => s.conditions?.find((c) => c.type === type);

  it('names spec.replicas, the per-pool limit and its flag, and is not Ready once the limit is warm', () => {
    const allotment = allot({ p: 1_000_000 }).get('ns/p');
    const warming = desiredPoolStatus({ ...obs, replicas: 1_000_000, allotment, warm: 10 }, undefined);
    expect(condition(warming, 'ReplicasLimited')).toMatchObject({
      status: 'True',
      reason: 'ReplicasOverPoolLimit',
      message: 'spec.replicas 1000000 is over the per-pool limit 64 (warmpool-driver --max-replicas-per-pool); 64 are kept warm',
    });
    expect(condition(warming, 'Ready')).toMatchObject({ status: 'False', reason: 'PoolWarming' });
    expect(condition(warming, 'Ready')?.message).toBe(
      '10 of 64 warm over 2 nodes (spec.replicas 1000000 is limited to 64, see ReplicasLimited)',
    );
    const full = desiredPoolStatus({ ...obs, replicas: 1_000_000, allotment, warm: 64, now: later }, warming);
    expect(condition(full, 'Ready')).toMatchObject({ status: 'False', reason: 'ReplicasOverLimit' });
    expect(condition(full, 'Ready')?.message).toContain('spec.replicas 1000000');
    // warm counts the status reports are the node's, capped by nothing but what the nodes were asked for
    expect(full.readyReplicas).toBe(64);
  });

  it("names the namespace limit and what the namespace's older pools hold", () => {
    const a = allot({ first: 1_000_000, second: 1_000_000 });
    const s = desiredPoolStatus({ ...obs, name: 'second', replicas: 1_000_000, allotment: a.get('ns/second'), warm: 0 }, undefined);
    expect(condition(s, 'ReplicasLimited')).toMatchObject({ status: 'True', reason: 'ReplicasOverNamespaceLimit' });
    expect(condition(s, 'ReplicasLimited')?.message).toBe(
      "spec.replicas 1000000 is over what the per-namespace limit 96 (warmpool-driver --max-replicas-per-namespace) leaves this pool: the namespace's pools created before it hold 64; 32 are kept warm",
    );
  });

  it('clears when the pool comes back under, with one Normal event; a limit reached is one Warning event', () => {
    const within = desiredPoolStatus({ ...obs, allotment: allot({ p: 10 }).get('ns/p'), warm: 10 }, undefined);
    expect(condition(within, 'ReplicasLimited')).toMatchObject({
      status: 'False',
      reason: 'WithinLimits',
      message: 'spec.replicas 10 is kept warm in full, within the per-pool limit 64 and the per-namespace limit 96',
    });
    // a new pool within its limits: no event for ReplicasLimited
    expect(poolEvents(undefined, within).map((e) => e.reason)).toEqual(['PoolWarm', 'AsExpected']);
    const over = desiredPoolStatus({ ...obs, replicas: 500, allotment: allot({ p: 500 }).get('ns/p'), warm: 10, now: later }, within);
    expect(poolEvents(within, over)).toEqual([
      { type: 'Warning', reason: 'PoolWarming', note: expect.stringContaining('limited to 64') as string },
      {
        type: 'Warning',
        reason: 'ReplicasOverPoolLimit',
        note: 'spec.replicas 500 is over the per-pool limit 64 (warmpool-driver --max-replicas-per-pool); 64 are kept warm',
      },
    ]);
    const back = desiredPoolStatus({ ...obs, allotment: allot({ p: 10 }).get('ns/p'), warm: 10, now: later }, over);
    expect(poolEvents(over, back).map((e) => [e.type, e.reason])).toEqual([
      ['Normal', 'PoolWarm'],
      ['Normal', 'WithinLimits'],
    ]);
    // the same state again: nothing to write, nothing to record
    expect(statusDiffers(back, desiredPoolStatus({ ...obs, allotment: allot({ p: 10 }).get('ns/p'), warm: 10, now: later }, back))).toBe(
      false,
    );
  });

  it('says no limit is set when both are 0', () => {
    const s = desiredPoolStatus(
      {
        ...obs,
        allotment: allotReplicas([{ id: 'ns/p', namespace: 'ns', name: 'p', replicas: 10 }], { perPool: 0, perNamespace: 0 }).get('ns/p'),
        warm: 0,
      },
      undefined,
    );
    expect(condition(s, 'ReplicasLimited')?.message).toBe('spec.replicas 10 is kept warm in full (no replica limit is set)');
  });
});

describe('invalidPoolStatus', () => {
  it('names the offending field in Ready and Degraded', () => {
    const s = invalidPoolStatus('p', 'spec.sandboxTemplateRef.name', 'must be a name', undefined, now);
    expect(s.conditions?.map((c) => [c.type, c.status, c.reason, c.message])).toEqual([
      ['Ready', 'False', 'InvalidSpec', 'spec.sandboxTemplateRef.name: must be a name'],
      ['Degraded', 'True', 'InvalidSpec', 'spec.sandboxTemplateRef.name: must be a name'],
    ]);
  });

  it('keeps the recorded keys: a restarted driver reads them back', () => {
    const poolKey = { template: 'img:a', net: 'none', size: 'small' };
    const s = invalidPoolStatus(
      'p',
      'spec.replicas',
      'must be >= 0',
      { poolKey, retiringPoolKey: { ...poolKey, template: 'img:old' } },
      now,
    );
    expect(s.poolKey).toEqual(poolKey);
    expect(s.retiringPoolKey?.template).toBe('img:old');
  });
});
