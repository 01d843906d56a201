import { LatencyModel, LatencyProfileSchema, NESTED_FACTOR } from './latency';
import { createRng } from './rng';

const profile = LatencyProfileSchema.parse({});

function samples(model: LatencyModel, op: 'clone' | 'cold', n = 4000, inflight = 0): number[] {
  return Array.from({ length: n }, () => model.sample(op, inflight)).sort((a, b) => a - b);
}

describe('LatencyModel', () => {
  it('is instant at speed 0', () => {
    const m = new LatencyModel({ profile, speed: 0, nested: false, rng: createRng(1) });
    expect(m.sample('cold')).toBe(0);
    expect(m.goldenBuildMs()).toBe(0);
  });

  it('follows the published clone and cold figures (p50, p90, max)', () => {
    const m = new LatencyModel({ profile, speed: 1, nested: false, rng: createRng(2) });
    const clone = samples(m, 'clone');
    expect(clone[2000]).toBeGreaterThan(29);
    expect(clone[2000]).toBeLessThan(35);
    expect(clone[3600]).toBeGreaterThan(36);
    expect(clone[3999]).toBeLessThanOrEqual(48);
    const cold = samples(m, 'cold');
    expect(cold[2000]).toBeGreaterThan(320);
    expect(cold[2000]).toBeLessThan(380);
    expect(cold[3999]).toBeLessThanOrEqual(414);
  });

  it('slows clones with provisions in flight (a burst of 16 takes several times longer)', () => {
    const m = new LatencyModel({ profile, speed: 1, nested: false, rng: createRng(3) });
    const burst = samples(m, 'clone', 2000, 15);
    expect(burst[1000]).toBeGreaterThan(99);
    expect(burst[1000]).toBeLessThan(149);
  });

  it('scales by speed and by the nested profile', () => {
    const a = new LatencyModel({ profile, speed: 1, nested: false, rng: createRng(4) });
    const b = new LatencyModel({ profile, speed: 0.5, nested: true, rng: createRng(4) });
    expect(b.sample('wake')).toBeCloseTo(a.sample('wake') * 0.5 * NESTED_FACTOR, 6);
  });
});
