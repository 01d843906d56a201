import { poolKeyId } from '@sandbox-scale/scale-core';
import { withCarriedOver } from './carry-over';

const spec = (template: string, warm: number) => ({ template, net: 'none', size: 'small', warm });
const cur = (template: string, target: number, net?: string) => ({ key: { template, ...(net !== undefined ? { net } : {}) }, target });

describe('withCarriedOver', () => {
  it('keeps the owned specs and adds the keys the driver does not own at their current target, sorted', () => {
    const got = withCarriedOver([spec('img:m', 2)], [cur('img:z', 5), cur('img:a', 3), cur('img:m', 9)], new Set());
    expect(got).toEqual([spec('img:a', 3), spec('img:m', 2), spec('img:z', 5)]);
  });

  it('drops keys being drained and keys at target 0', () => {
    const got = withCarriedOver(
      [],
      [cur('img:gone', 4), cur('img:zero', 0), cur('img:other', 1)],
      new Set([poolKeyId({ template: 'img:gone' })]),
    );
    expect(got).toEqual([spec('img:other', 1)]);
  });

  it('matches keys after normalisation, so an owned key reported with an empty net is not sent twice', () => {
    const got = withCarriedOver([spec('img:m', 2)], [cur('img:m', 7, '')], new Set());
    expect(got).toEqual([spec('img:m', 2)]);
  });
});
