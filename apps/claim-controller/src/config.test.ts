import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isConfigError, parseFlags } from '@sandbox-scale/kube-runtime';
import { ClaimControllerFlagsSchema, loadFleetToken } from './config';

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
    });
  });
  it('names the bad flag', () => {
    expect(() => parseFlags(ClaimControllerFlagsSchema, { ...opts, argv: ['--record-attempts=0'] })).toThrow(/--record-attempts/);
  });
});

describe('loadFleetToken', () => {
  it('reads and trims the file before the env', () => {
    const f = join(mkdtempSync(join(tmpdir(), 'cc-')), 'token');
    writeFileSync(f, '  file-token\n');
    expect(loadFleetToken(f, { SANDBOX_SCALE_FLEET_TOKEN: 'env-token' })).toBe('file-token');
  });
  it('falls back to the env, then to none', () => {
    expect(loadFleetToken('', { SANDBOX_SCALE_FLEET_TOKEN: 'env-token' })).toBe('env-token');
    expect(loadFleetToken('', {})).toBe('');
  });
  it('names the flag when the file is unreadable', () => {
    let err: unknown;
    try {
      loadFleetToken('/nonexistent/token', {});
    } catch (e) {
      err = e;
    }
    expect(isConfigError(err)).toBe(true);
    expect(String(err)).toMatch(/--fleet-token-file/);
  });
});
