import { RENEWAL_WINDOW, leaseRenewAtMs, renewalFraction } from './renewal';

describe('lease renewal point', () => {
  it('falls between four and six tenths of the lease, spread by the random draw', () => {
    expect(renewalFraction(() => 0)).toBe(RENEWAL_WINDOW.from);
    expect(renewalFraction(() => 0.999999)).toBeCloseTo(RENEWAL_WINDOW.to, 5);
    expect(
      leaseRenewAtMs(
        1_000,
        11_000,
        renewalFraction(() => 0),
      ),
    ).toBe(5_000);
    expect(
      leaseRenewAtMs(
        1_000,
        11_000,
        renewalFraction(() => 0.5),
      ),
    ).toBe(6_000);
  });
});
