import { z } from 'zod';
import { parseFlags, isHelp } from './flags';
import { ManagerFlagsSchema, managerFlagShape, parseDuration } from './manager-flags';

const opts = { program: 'x', summary: 's', env: {} };

describe('managerFlagShape', () => {
  it('defaults as controller-runtime does', () => {
    expect(parseFlags(ManagerFlagsSchema, { ...opts, argv: [] })).toEqual({
      kubeconfig: '',
      leaderElect: false,
      leaderElectionNamespace: '',
      leaderElectLeaseDuration: 15_000,
      leaderElectRenewDeadline: 10_000,
      leaderElectRetryPeriod: 2000,
      metricsBindAddress: ':8080',
      healthProbeBindAddress: ':8081',
      metricsAuth: 'delegated',
      metricsTlsCertFile: '',
      metricsTlsPrivateKeyFile: '',
      gracefulShutdownTimeout: 30_000,
    });
  });

  it('spreads into an app schema and reads flags and env', () => {
    const schema = z.object({ ...managerFlagShape, nodeName: z.string() });
    const c = parseFlags(schema, {
      ...opts,
      argv: ['--leader-elect', '--metrics-bind-address=0', '--leader-elect-lease-duration', '1m30s', '--node-name=n1'],
      env: { SANDBOX_SCALE_KUBECONFIG: '/tmp/kc' },
    });
    expect(c).toMatchObject({
      leaderElect: true,
      metricsBindAddress: '0',
      leaderElectLeaseDuration: 90_000,
      kubeconfig: '/tmp/kc',
      nodeName: 'n1',
    });
  });

  it('names the bad flag', () => {
    expect(() => parseFlags(ManagerFlagsSchema, { ...opts, argv: ['--health-probe-bind-address=8081'] })).toThrow(
      /--health-probe-bind-address: must be host:port/,
    );
    expect(() => parseFlags(ManagerFlagsSchema, { ...opts, argv: ['--graceful-shutdown-timeout=soon'] })).toThrow(
      /--graceful-shutdown-timeout: "soon" is not a duration/,
    );
  });

  it('shows duration defaults as flag text in --help', () => {
    const r = parseFlags(ManagerFlagsSchema, { ...opts, argv: ['--help'] });
    expect(isHelp(r) && r.help).toContain('(default "15s")');
  });

  it('parses Go-style durations', () => {
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('1h2m3s')).toBe(3_723_000);
    expect(parseDuration('1.5s')).toBe(1500);
    expect(parseDuration('15')).toBeUndefined();
  });
});
