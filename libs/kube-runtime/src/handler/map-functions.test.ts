import { enqueueObject, enqueueOwner } from './map-functions';
import { and, generationChanged, labelsChanged, or } from '../predicate/predicate';
import type { KubeObject } from '../client/object-meta';

const owned: KubeObject = {
  metadata: {
    name: 'child',
    namespace: 'ns',
    ownerReferences: [
      { apiVersion: 'agents.x-k8s.io/v1alpha1', kind: 'SandboxWarmPool', name: 'pool', uid: 'u1', controller: true },
      { apiVersion: 'v1', kind: 'ConfigMap', name: 'not-controller', uid: 'u2' },
      { apiVersion: 'other.io/v1', kind: 'SandboxWarmPool', name: 'foreign', uid: 'u3', controller: true },
    ],
  },
};

describe('map functions', () => {
  it('enqueueObject maps an object to itself', () => {
    expect(enqueueObject()(owned)).toEqual([{ namespace: 'ns', name: 'child' }]);
    expect(enqueueObject()({ metadata: { name: 'cluster-scoped' } })).toEqual([{ namespace: '', name: 'cluster-scoped' }]);
  });
  it('enqueueOwner maps to controlling owners of the kind (and group when given)', () => {
    expect(enqueueOwner('SandboxWarmPool')(owned).map((r) => r.name)).toEqual(['pool', 'foreign']);
    expect(enqueueOwner('SandboxWarmPool', { apiGroup: 'agents.x-k8s.io' })(owned)).toEqual([{ namespace: 'ns', name: 'pool' }]);
    expect(enqueueOwner('ConfigMap')(owned)).toEqual([]);
    expect(enqueueOwner('SandboxWarmPool', { apiGroup: 'other.io', clusterScopedOwner: true })(owned)).toEqual([
      { namespace: '', name: 'foreign' },
    ]);
  });
});

describe('predicates', () => {
  const v = (generation: number, labels: Record<string, string> = {}): KubeObject => ({ metadata: { generation, labels } });
  it('generationChanged passes spec changes only', () => {
    const p = generationChanged();
    expect(p.update?.(v(2), v(1))).toBe(true);
    expect(p.update?.(v(1), v(1))).toBe(false);
  });
  it('labelsChanged compares label sets', () => {
    const p = labelsChanged();
    expect(p.update?.(v(1, { a: '1' }), v(1, { a: '1' }))).toBe(false);
    expect(p.update?.(v(1, { a: '2' }), v(1, { a: '1' }))).toBe(true);
  });
  it('and/or combine', () => {
    expect(and(generationChanged(), labelsChanged()).update?.(v(2, { a: '1' }), v(1))).toBe(true);
    expect(and(generationChanged(), labelsChanged()).update?.(v(2), v(1))).toBe(false);
    expect(or(generationChanged(), labelsChanged()).update?.(v(1, { a: '1' }), v(1))).toBe(true);
    expect(or(generationChanged(), labelsChanged()).create?.(v(1))).toBe(true);
  });
});
