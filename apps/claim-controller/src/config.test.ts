import { parseFlags } from '@sandbox-scale/kube-runtime';
import { ClaimControllerFlagsSchema } from './config';

const opts = { program: 'claim-controller', summary: 's', env: {} };

describe('claim-controller flags', () => {
  it('parses kebab-case flags with defaults', () => {
    const c = parseFlags(ClaimControllerFlagsSchema, {
      ...opts,
      argv: ['--orphan-interval=5s', '--fast-path-bind-address', '127.0.0.1:0'],
    });
    expect(c).toMatchObject({
      orphanInterval: 5000,
      fastPathBindAddress: '127.0.0.1:0',
      recordAttempts: 5,
      fleetTokenFile: '',
      coldClaimTimeout: 120_000,
      failedNodeCooldown: 15_000,
      fastPathRecordDefer: 2_000,
    });
  });
  it('refuses a record defer that would use up a record attempt', () => {
    expect(() => parseFlags(ClaimControllerFlagsSchema, { ...opts, argv: ['--fast-path-record-defer=10s'] })).toThrow(
      /--fast-path-record-defer/,
    );
    expect(parseFlags(ClaimControllerFlagsSchema, { ...opts, argv: ['--fast-path-record-defer=0s'] })).toMatchObject({
      fastPathRecordDefer: 0,
    });
  });
  it('caps the connections the fast path holds (10,000 unless told), and names a cap of 0', () => {
    expect(parseFlags(ClaimControllerFlagsSchema, { ...opts, argv: [] })).toMatchObject({ fastPathMaxConnections: 10_000 });
    expect(parseFlags(ClaimControllerFlagsSchema, { ...opts, argv: ['--fast-path-max-connections=64'] })).toMatchObject({
      fastPathMaxConnections: 64,
    });
    expect(() => parseFlags(ClaimControllerFlagsSchema, { ...opts, argv: ['--fast-path-max-connections=0'] })).toThrow(
      /--fast-path-max-connections/,
    );
  });
  it('names the bad flag', () => {
    expect(() => parseFlags(ClaimControllerFlagsSchema, { ...opts, argv: ['--record-attempts=0'] })).toThrow(/--record-attempts/);
  });
});
