import { poolKeyId, type PoolCapacity } from '@sandbox-scale/scale-core';
import { needsRepush, sameTargets, targetsByKey, type DriftInput } from './node-drift';
import type { NodePoolSpec } from './plan-targets';

const spec = (template: string, warm: number): NodePoolSpec => ({ template, net: 'none', size: 'small', warm });
const report = (template: string, target: number, extra: Partial<PoolCapacity> = {}): PoolCapacity => ({
  template,
  warm: 0,
  target,
  ...extra,
});
const input = (over: Partial<DriftInput>): DriftInput => ({
  desired: [spec('img:a', 4), spec('img:b', 0)],
  reported: [],
  reportRv: '20',
  rvAtLastPut: '10',
  ...over,
});

describe('needsRepush (the drift rule)', () => {
  it('re-PUTs a node that reports an empty set after the last PUT (sandboxd restarted without its pools)', () => {
    expect(needsRepush(input({ reported: undefined }))).toBe(true);
    expect(needsRepush(input({ reported: [] }))).toBe(true);
  });

  it('re-PUTs a node whose set another writer changed after the last PUT', () => {
    expect(needsRepush(input({ reported: [report('img:a', 1)] }))).toBe(true);
    expect(needsRepush(input({ reported: [report('img:a', 4), report('img:x', 2)] }))).toBe(true);
  });

  it('compares only the keys it answers for when it carries the others over (a namespace-scoped driver)', () => {
    const compared = new Set([poolKeyId({ template: 'img:a' }), poolKeyId({ template: 'img:b' }), poolKeyId({ template: 'img:gone' })]);
    // Another namespace's key is the other driver's business, whatever its target.
    expect(needsRepush(input({ reported: [report('img:a', 4), report('img:other', 7)], compared }))).toBe(false);
    // A key this driver drains still counts: the node must not keep it.
    expect(needsRepush(input({ reported: [report('img:a', 4), report('img:gone', 2)], compared }))).toBe(true);
  });

  it('does not re-PUT while the report is the one the last PUT was composed against (the inventory lags)', () => {
    expect(needsRepush(input({ reported: [], reportRv: '10', rvAtLastPut: '10' }))).toBe(false);
  });

  it('does not re-PUT when the newer report matches the plan', () => {
    expect(needsRepush(input({ reported: [report('img:a', 4, { warm: 3 }), report('img:b', 0)] }))).toBe(false);
  });

  it('treats a pool missing from the report as target 0, and normalises keys ("" net/size = none/small)', () => {
    expect(needsRepush(input({ reported: [report('img:a', 4, { net: '', size: '' })] }))).toBe(false);
    expect(needsRepush(input({ desired: [spec('img:a', 4)], reported: [report('img:a', 4), report('img:gone', 0)] }))).toBe(false);
  });

  it('compares target, not warm: a pool still filling is not drift', () => {
    expect(needsRepush(input({ reported: [report('img:a', 4, { warm: 0 })] }))).toBe(false);
  });

  it('counts any report as newer when the node was never PUT', () => {
    expect(needsRepush(input({ reported: [], reportRv: '10', rvAtLastPut: undefined }))).toBe(true);
  });
});

describe('targetsByKey / sameTargets', () => {
  it('sums keys that normalise alike and treats absent keys as 0', () => {
    const m = targetsByKey([report('img:a', 1, { net: '' }), report('img:a', 2, { net: 'none' })]);
    expect([...m.values()]).toEqual([3]);
    expect(sameTargets(new Map([['k', 0]]), new Map())).toBe(true);
    expect(sameTargets(new Map([['k', 1]]), new Map())).toBe(false);
    expect(sameTargets(new Map(), new Map([['k', 1]]))).toBe(false);
  });
});
