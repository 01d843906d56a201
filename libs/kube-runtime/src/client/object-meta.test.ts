import { keyFieldsOf, metaOf, withoutManagedFields } from './object-meta';

describe('keyFieldsOf', () => {
  it('reads name, namespace, uid and resourceVersion as metaOf does for a well-formed object', () => {
    const obj = {
      metadata: { name: 'a', namespace: 'ns', uid: 'u1', resourceVersion: '7', labels: { k: 'v' }, managedFields: [{ manager: 'm' }] },
    };
    const m = metaOf(obj);
    expect(keyFieldsOf(obj)).toEqual({ name: m.name, namespace: m.namespace, uid: m.uid, resourceVersion: m.resourceVersion });
  });

  it('keeps the key of an object whose other metadata is malformed, so the typed parser can report it', () => {
    const obj = { metadata: { name: 'a', namespace: 'ns', labels: { k: 1 } } };
    expect(metaOf(obj)).toEqual({});
    expect(keyFieldsOf(obj)).toMatchObject({ name: 'a', namespace: 'ns' });
  });

  it('leaves out fields that are not strings and never throws', () => {
    expect(keyFieldsOf({ metadata: { name: 3, resourceVersion: null } })).toEqual({
      name: undefined,
      namespace: undefined,
      uid: undefined,
      resourceVersion: undefined,
    });
    expect(keyFieldsOf(null)).toEqual({});
    expect(keyFieldsOf({ metadata: 'x' })).toEqual({});
    expect(keyFieldsOf('x')).toEqual({});
  });
});

describe('withoutManagedFields', () => {
  it('drops metadata.managedFields and keeps everything else, leaving the input as it was', () => {
    const obj = { kind: 'K', metadata: { name: 'a', managedFields: [{ manager: 'm' }], labels: { k: 'v' } }, spec: { x: 1 } };
    const out = withoutManagedFields(obj) as typeof obj;
    expect(out).toEqual({ kind: 'K', metadata: { name: 'a', labels: { k: 'v' } }, spec: { x: 1 } });
    expect(out.spec).toBe(obj.spec);
    expect(obj.metadata.managedFields).toHaveLength(1);
  });

  it('returns an object without managedFields, or anything that is not an object, as it is', () => {
    const obj = { metadata: { name: 'a' } };
    expect(withoutManagedFields(obj)).toBe(obj);
    expect(withoutManagedFields(null)).toBeNull();
    expect(withoutManagedFields('x')).toBe('x');
  });
});
