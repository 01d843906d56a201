import { z } from 'zod';
import { parseObject } from '@sandbox-scale/scale-core';
import { describeParseError } from './parse-failure';

const Schema = z.object({ spec: z.object({ replicas: z.number(), containers: z.array(z.object({ image: z.string() })) }) });

function thrown(f: () => unknown): unknown {
  try {
    f();
  } catch (err) {
    return err;
  }
  throw new Error('did not throw');
}

describe('describeParseError', () => {
  it('reads the field path of a ZodError in Kubernetes spelling', () => {
    const err = thrown(() => Schema.parse({ spec: { replicas: 1, containers: [{ image: 3 }] } }));
    expect(describeParseError(err).fieldPath).toBe('spec.containers[0].image');
  });
  it("reads scale-core's ObjectValidationError", () => {
    const err = thrown(() =>
      parseObject(Schema, { kind: 'SandboxWarmPool', metadata: { name: 'p' }, spec: { replicas: 'x', containers: [] } }),
    );
    const d = describeParseError(err);
    expect(d.fieldPath).toBe('spec.replicas');
    expect(d.message).toContain('spec.replicas');
  });
  it('reads fieldPath or path properties, and keeps the message of anything else', () => {
    expect(describeParseError(Object.assign(new Error('bad'), { fieldPath: 'spec.size' }))).toEqual({
      fieldPath: 'spec.size',
      message: 'bad',
    });
    expect(describeParseError(Object.assign(new Error('bad'), { path: ['spec', 'size'] })).fieldPath).toBe('spec.size');
    expect(describeParseError(new Error('opaque'))).toEqual({ fieldPath: '', message: 'opaque' });
    expect(describeParseError('str')).toEqual({ fieldPath: '', message: 'str' });
  });
});
