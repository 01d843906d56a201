import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fleetTokenInput, kubeConfigInput, readFleetToken, readInputs } from './flag-input';

const KUBECONFIG = `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: 'https://10.0.0.1:6443' } }]
users: [{ name: u, user: { token: t } }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`;

describe('readInputs', () => {
  it('reads every input once the flags parse', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'flag-input-')), 'kubeconfig');
    writeFileSync(file, KUBECONFIG);
    const { values, problems } = readInputs(
      { kubeConfig: kubeConfigInput, twice: { flag: '--n', read: (c: { kubeconfig: string; n: number }) => c.n * 2 } },
      { kubeconfig: file, n: 21 },
    );
    expect(problems).toEqual([]);
    expect(values.kubeConfig.getCurrentCluster()?.server).toBe('https://10.0.0.1:6443');
    expect(values.twice).toBe(42);
  });

  it('collects each failure under its flag, once, instead of stopping at the first', () => {
    const { problems } = readInputs(
      {
        kubeConfig: kubeConfigInput,
        token: {
          flag: '--token-file',
          read: () => {
            throw new Error('--token-file: cannot read /t');
          },
        },
        other: {
          flag: '--other',
          read: () => {
            throw new Error('not PEM');
          },
        },
      },
      { kubeconfig: '/nonexistent/kubeconfig' },
    );
    expect(problems).toHaveLength(3);
    expect(problems[0]).toMatch(/^--kubeconfig: .*\/nonexistent\/kubeconfig/);
    expect(problems.slice(1)).toEqual(['--token-file: cannot read /t', '--other: not PEM']);
  });
});

describe('readFleetToken', () => {
  it('reads and trims the file before the env', () => {
    const f = join(mkdtempSync(join(tmpdir(), 'fleet-token-')), 'token');
    writeFileSync(f, '  file-token\n');
    expect(readFleetToken(f, { SANDBOX_SCALE_FLEET_TOKEN: 'env-token' })).toBe('file-token');
  });
  it('falls back to the env, then to none', () => {
    expect(readFleetToken('', { SANDBOX_SCALE_FLEET_TOKEN: ' env-token\n' })).toBe('env-token');
    expect(readFleetToken('', {})).toBe('');
  });
  it('reports an unreadable file under --fleet-token-file, with the other inputs', () => {
    const { problems } = readInputs({ fleetToken: fleetTokenInput }, { fleetTokenFile: '/nonexistent/token' });
    expect(problems).toEqual([expect.stringMatching(/^--fleet-token-file: cannot read \/nonexistent\/token: .*ENOENT/)]);
  });
});
