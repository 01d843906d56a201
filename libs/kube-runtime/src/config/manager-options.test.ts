import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { type ConfigError, isConfigError, parseFlags } from './flags';
import { ManagerFlagsSchema, type ManagerFlags } from './manager-flags';
import { managerOptionsFromFlags, podNamespace } from './manager-options';
import { captureLog } from '../testing/capture-log';

const flags = (argv: string[]): ManagerFlags =>
  parseFlags(ManagerFlagsSchema, { program: 'x', summary: 's', env: {}, argv }) as ManagerFlags;

describe('managerOptionsFromFlags', () => {
  const wiring = {
    log: captureLog().log,
    registry: new Registry(),
    kubeConfig: new KubeConfig(),
    leaseName: 'sandbox-scale-test',
    env: { POD_NAMESPACE: 'sandbox-system' },
  };

  it('leaves election off unless asked', () => {
    const o = managerOptionsFromFlags(flags([]), wiring);
    expect(o.leaderElection).toBeUndefined();
    expect(o).toMatchObject({ metricsBindAddress: ':8080', healthProbeBindAddress: ':8081', gracefulShutdownTimeoutMs: 30_000 });
  });

  it('maps election flags, defaulting the Lease namespace to the pod namespace', () => {
    const o = managerOptionsFromFlags(flags(['--leader-elect', '--leader-elect-retry-period=500ms']), wiring);
    expect(o.leaderElection).toEqual({
      namespace: 'sandbox-system',
      name: 'sandbox-scale-test',
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 500,
    });
    expect(managerOptionsFromFlags(flags(['--leader-elect', '--leader-election-namespace=ops']), wiring).leaderElection?.namespace).toBe(
      'ops',
    );
  });

  it('refuses election timings under which two replicas could lead at once, naming the flag', () => {
    const refused = (argv: string[]): string => {
      try {
        managerOptionsFromFlags(flags(['--leader-elect', ...argv]), wiring);
        return '';
      } catch (err) {
        expect(isConfigError(err)).toBe(true);
        return (err as ConfigError).flag ?? '';
      }
    };
    expect(refused(['--leader-elect-lease-duration=10s'])).toBe('leader-elect-renew-deadline');
    expect(refused(['--leader-elect-renew-deadline=2s'])).toBe('leader-elect-retry-period');
    expect(
      refused(['--leader-elect-lease-duration=800ms', '--leader-elect-renew-deadline=500ms', '--leader-elect-retry-period=100ms']),
    ).toBe('leader-elect-lease-duration');
    expect(refused(['--leader-elect-lease-duration=8s', '--leader-elect-renew-deadline=6s', '--leader-elect-retry-period=1s'])).toBe('');
    // off, the timings are not read
    expect(managerOptionsFromFlags(flags(['--leader-elect-lease-duration=1s']), wiring).leaderElection).toBeUndefined();
  });
});

describe('podNamespace', () => {
  it('prefers $POD_NAMESPACE, then the service account file, then default', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ns-'));
    const file = join(dir, 'namespace');
    writeFileSync(file, 'from-file\n');
    expect(podNamespace({ POD_NAMESPACE: 'env' }, file)).toBe('env');
    expect(podNamespace({}, file)).toBe('from-file');
    expect(podNamespace({}, join(dir, 'missing'))).toBe('default');
  });
});
