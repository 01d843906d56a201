import { parseObject } from '../schemas/parse-object';
import { SandboxSchema } from '../schemas/sandbox';
import { SandboxTemplateSchema } from '../schemas/sandbox-template';
import { netOfTemplate, poolKeyForSandbox, poolKeyForTemplate } from './pool-key-of';

const NET = 'sandbox.cocoonstack.io/net';
const podTemplate = (podAnnotations?: Record<string, string>) => ({
  ...(podAnnotations ? { metadata: { annotations: podAnnotations } } : {}),
  spec: { containers: [{ name: 'c', image: 'img', resources: { requests: { cpu: '2' } } }] },
});
const template = (annotations?: Record<string, string>, podAnnotations?: Record<string, string>) =>
  parseObject(SandboxTemplateSchema, {
    apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
    kind: 'SandboxTemplate',
    metadata: { name: 't', ...(annotations ? { annotations } : {}) },
    spec: { podTemplate: podTemplate(podAnnotations) },
  });
const sandbox = (annotations?: Record<string, string>, podAnnotations?: Record<string, string>) =>
  parseObject(SandboxSchema, {
    apiVersion: 'agents.x-k8s.io/v1beta1',
    kind: 'Sandbox',
    metadata: { name: 's', ...(annotations ? { annotations } : {}) },
    spec: { podTemplate: podTemplate(podAnnotations) },
  });

describe('pool key of a template and of a sandbox', () => {
  it('reads the template annotation first, then the pod template annotation', () => {
    expect(netOfTemplate(template({ [NET]: 'egress' }, { [NET]: 'other' }))).toBe('egress');
    expect(netOfTemplate(template({ [NET]: '' }, { [NET]: 'egress' }))).toBe('egress');
    expect(netOfTemplate(template(undefined, { [NET]: 'egress' }))).toBe('egress');
    expect(netOfTemplate(template())).toBeUndefined();
  });

  it('gives the driver and Create the same key for the same workload', () => {
    expect(poolKeyForTemplate(template({ [NET]: 'egress' }))).toEqual({ template: 'img', net: 'egress', size: 'medium' });
    expect(poolKeyForSandbox(sandbox({ [NET]: 'egress' }))).toEqual(poolKeyForTemplate(template({ [NET]: 'egress' })));
    expect(poolKeyForSandbox(sandbox())).toEqual(poolKeyForTemplate(template()));
  });

  it('ignores the pod template annotation on a Sandbox, as the reference does', () => {
    expect(poolKeyForSandbox(sandbox(undefined, { [NET]: 'egress' })).net).toBe('none');
  });
});
