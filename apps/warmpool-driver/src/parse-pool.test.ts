import { parseWarmPool } from './parse-pool';

const pool = (ref: string, replicas?: unknown) => ({
  apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
  kind: 'SandboxWarmPool',
  metadata: { name: 'p', namespace: 'ns' },
  spec: { sandboxTemplateRef: { name: ref }, ...(replicas !== undefined ? { replicas } : {}) },
});

describe('parseWarmPool', () => {
  it('applies the replicas default of 1', () => {
    expect(parseWarmPool(pool('tpl')).spec.replicas).toBe(1);
  });

  it('rejects a template reference no SandboxTemplate can have, naming the field', () => {
    expect(() => parseWarmPool(pool('Not_A_Name!'))).toThrow(/spec\.sandboxTemplateRef\.name/);
  });

  it('rejects a negative replicas, naming the field', () => {
    expect(() => parseWarmPool(pool('tpl', -1))).toThrow(/spec\.replicas/);
  });
});
