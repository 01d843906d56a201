import fc from 'fast-check';
import { QuantityParseError } from '../quantity/quantity';
import { sizeClassForContainers, type ResourceContainer } from './size-class';

const requests = (r: Record<string, string | number>): ResourceContainer[] => [{ image: 'img', resources: { requests: r } }];

describe('sizeClassForContainers', () => {
  it.each([
    [{ cpu: '1', memory: '2Gi' }, 'small'],
    [{ cpu: '1000m', memory: '2Gi' }, 'small'],
    [{ cpu: '1001m' }, 'medium'],
    [{ cpu: '1500m' }, 'medium'],
    [{ cpu: '4' }, 'medium'],
    [{ cpu: '4001m' }, 'large'],
    [{ memory: '8Gi' }, 'medium'],
    [{ memory: '8589934593' }, 'large'],
    [{ memory: '2G' }, 'small'],
    [{ memory: '2049Mi' }, 'medium'],
    [{ memory: '8G' }, 'medium'],
    [{ cpu: '1e3' }, 'large'],
    [{ cpu: 2 }, 'medium'],
    [{}, 'small'],
  ])('classifies requests %p as %s', (r, expected) => {
    expect(sizeClassForContainers(requests(r))).toBe(expected);
  });

  it('is small with no containers or no resources', () => {
    expect(sizeClassForContainers([])).toBe('small');
    expect(sizeClassForContainers(undefined)).toBe('small');
    expect(sizeClassForContainers([{ image: 'img' }])).toBe('small');
  });

  it('looks only at the first container', () => {
    expect(sizeClassForContainers([{ image: 'a' }, { image: 'b', resources: { requests: { cpu: '16' } } }])).toBe('small');
  });

  it('uses limits when the request is absent', () => {
    expect(sizeClassForContainers([{ resources: { limits: { cpu: '2' } } }])).toBe('medium');
  });

  it('uses limits when the request is zero', () => {
    expect(sizeClassForContainers([{ resources: { requests: { cpu: '0', memory: '0Gi' }, limits: { cpu: '8', memory: '1Gi' } } }])).toBe(
      'large',
    );
  });

  it('prefers a non-zero request over the limit', () => {
    expect(sizeClassForContainers([{ resources: { requests: { cpu: '500m' }, limits: { cpu: '8' } } }])).toBe('small');
  });

  it('resolves cpu and memory independently', () => {
    // cpu from requests (small), memory from limits (large).
    expect(sizeClassForContainers([{ resources: { requests: { cpu: '500m' }, limits: { cpu: '8', memory: '16Gi' } } }])).toBe('large');
    // memory from requests (medium), cpu from limits (small).
    expect(sizeClassForContainers([{ resources: { requests: { memory: '3Gi' }, limits: { cpu: '1', memory: '32Gi' } } }])).toBe('medium');
  });

  it('throws on a malformed quantity rather than guessing', () => {
    expect(() => sizeClassForContainers(requests({ cpu: 'lots' }))).toThrow(QuantityParseError);
  });

  it('puts every cpu millivalue on the right side of the strict thresholds (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10_000 }), (milli) => {
        const expected = milli > 4000 ? 'large' : milli > 1000 ? 'medium' : 'small';
        expect(sizeClassForContainers(requests({ cpu: `${milli}m` }))).toBe(expected);
      }),
    );
  });

  it('puts every memory byte count on the right side of the strict thresholds (property)', () => {
    const gi = 2 ** 30;
    const boundary = fc.oneof(
      fc.integer({ min: 2 * gi - 3, max: 2 * gi + 3 }),
      fc.integer({ min: 8 * gi - 3, max: 8 * gi + 3 }),
      fc.integer({ min: 1, max: 16 * gi }),
    );
    fc.assert(
      fc.property(boundary, (bytes) => {
        const expected = bytes > 8 * gi ? 'large' : bytes > 2 * gi ? 'medium' : 'small';
        expect(sizeClassForContainers(requests({ memory: String(bytes) }))).toBe(expected);
      }),
    );
  });
});
