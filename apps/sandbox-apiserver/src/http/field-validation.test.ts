import { checkUnknownFields, fieldValidationOf, unknownSandboxFields } from './field-validation';

const sandbox = (extra: Record<string, unknown> = {}, spec: Record<string, unknown> = {}) => ({
  apiVersion: 'agents.x-k8s.io/v1beta1',
  kind: 'Sandbox',
  metadata: { name: 'x', labels: { a: 'b' }, annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}' } },
  spec: {
    podTemplate: { spec: { containers: [{ name: 'm', image: 'i', env: [{ name: 'A', value: 'b' }] }], nodeSelector: { z: 'y' } } },
    shutdownPolicy: 'Retain',
    ...spec,
  },
  ...extra,
});

describe('fieldValidation on create', () => {
  it('finds fields the schema does not declare, at any depth, but not inside open objects', () => {
    expect(unknownSandboxFields(sandbox())).toEqual([]);
    expect(
      unknownSandboxFields(
        sandbox(
          { extra: 1, metadata: { name: 'x', nmae: 'y' } },
          { foo: true, podTemplate: { spec: { containers: [{ name: 'm' }] }, metdata: {} } },
        ),
      ),
    ).toEqual(['extra', 'metadata.nmae', 'spec.foo', 'spec.podTemplate.metdata']);
  });

  it('Strict answers 400 naming the field, Warn returns Warning headers, Ignore says nothing', () => {
    const body = sandbox({}, { foo: 1 });
    expect(() => checkUnknownFields(body, 'Strict')).toThrow(
      expect.objectContaining({ code: 400, message: 'strict decoding error: unknown field "spec.foo"' }),
    );
    expect(checkUnknownFields(body, 'Warn')).toEqual(['299 - "unknown field \\"spec.foo\\""']);
    expect(checkUnknownFields(body, 'Ignore')).toEqual([]);
    expect(checkUnknownFields(sandbox(), 'Strict')).toEqual([]);
  });

  it('defaults to Warn and rejects an unknown mode', () => {
    expect(fieldValidationOf(null)).toBe('Warn');
    expect(fieldValidationOf('Strict')).toBe('Strict');
    expect(() => fieldValidationOf('strict')).toThrow(expect.objectContaining({ code: 400 }));
  });
});
