import { desiredPoolStatus, invalidPoolStatus, sameRecordedKeys, statusDiffers, transitions } from './pool-status';

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
