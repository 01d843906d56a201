import { negotiate } from './negotiate';

describe('negotiate', () => {
  it('picks the Table kubectl asks for first', () => {
    expect(
      negotiate('application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json'),
    ).toEqual({ kind: 'table', version: 'v1' });
  });
  it('skips protobuf and falls through to metadata-only JSON', () => {
    expect(
      negotiate(
        'application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1',
      ),
    ).toEqual({ kind: 'metadata', version: 'v1' });
  });
  it('recognises aggregated discovery v2', () => {
    expect(negotiate('application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json')).toEqual({
      kind: 'discovery-v2',
      version: 'v2',
    });
  });
  it('defaults to objects and refuses what it cannot produce', () => {
    expect(negotiate(undefined)).toEqual({ kind: 'object' });
    expect(negotiate('text/html')).toBeUndefined();
  });
});
