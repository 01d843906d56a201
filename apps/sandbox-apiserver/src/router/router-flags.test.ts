import { parseFlags } from '@sandbox-scale/kube-runtime';
import { z } from 'zod';
import { routerConfigOf, routerFlagShape } from './router-flags';

const schema = z.object(routerFlagShape);
const parse = (argv: string[]) => {
  const flags = parseFlags(schema, { program: 'sandbox-apiserver', summary: '', argv, env: {} });
  if ('help' in flags) throw new Error('help');
  return routerConfigOf(flags);
};

describe('router flags', () => {
  it('leave the router off unless --router-bind-address names an address', () => {
    expect(parse([])).toEqual({});
    expect(parse(['--router-bind-address', '0'])).toEqual({});
  });

  it('start it with Kubernetes authentication, HTTPS, 180 s, 1,024 relays (256 a namespace), 30 m idle and 4 h at most by default', () => {
    expect(parse(['--router-bind-address', ':8080'])).toEqual({
      router: {
        host: '',
        port: 8080,
        authentication: 'kubernetes',
        tls: true,
        proxyTimeoutMs: 180_000,
        maxRelays: 1024,
        maxRelaysPerNamespace: 256,
        relayIdleTimeoutMs: 1_800_000,
        relayMaxDurationMs: 14_400_000,
      },
    });
  });

  it('take none, plain HTTP, a shorter proxy timeout and another relay cap only when given', () => {
    expect(
      parse([
        '--router-bind-address',
        '127.0.0.1:0',
        '--router-authentication',
        'none',
        '--router-tls=false',
        '--router-proxy-timeout',
        '30s',
        '--router-max-relays',
        '8',
        '--router-max-relays-per-namespace',
        '2',
        '--router-relay-idle-timeout',
        '1m',
        '--router-relay-max-duration',
        '2h',
      ]),
    ).toEqual({
      router: {
        host: '127.0.0.1',
        port: 0,
        authentication: 'none',
        tls: false,
        proxyTimeoutMs: 30_000,
        maxRelays: 8,
        maxRelaysPerNamespace: 2,
        relayIdleTimeoutMs: 60_000,
        relayMaxDurationMs: 7_200_000,
      },
    });
  });

  it('add a tunnel listener on a loopback address beside a router on the pod address, on the same port', () => {
    expect(parse(['--router-bind-address', '[10.1.2.3]:8080', '--router-tunnel-bind-address', '127.0.0.1:8080'])).toEqual({
      router: {
        host: '10.1.2.3',
        port: 8080,
        authentication: 'kubernetes',
        tunnel: { host: '127.0.0.1', port: 8080 },
        tls: true,
        proxyTimeoutMs: 180_000,
        maxRelays: 1024,
        maxRelaysPerNamespace: 256,
        relayIdleTimeoutMs: 1_800_000,
        relayMaxDurationMs: 14_400_000,
      },
    });
    expect(parse(['--router-bind-address', '[fd00::7]:8080', '--router-tunnel-bind-address', '[::1]:8080']).router).toMatchObject({
      host: 'fd00::7',
      tunnel: { host: '::1', port: 8080 },
    });
    expect(parse(['--router-bind-address', ':8080', '--router-tunnel-bind-address', '127.0.0.1:8081']).router?.tunnel).toEqual({
      host: '127.0.0.1',
      port: 8081,
    });
    expect(parse(['--router-bind-address', ':8080', '--router-tunnel-bind-address', '0']).router?.tunnel).toBeUndefined();
  });

  it('refuse a tunnel listener off the loopback, by a name, without the router, or on the port the router holds on every interface', () => {
    for (const addr of [':8080', '0.0.0.0:8080', '10.1.2.3:8080', '[::]:8080', 'localhost:8080', '[fe80::1]:8080', 'nonsense'])
      expect(() => parse(['--router-bind-address', '[10.1.2.3]:8080', '--router-tunnel-bind-address', addr])).toThrow(
        /--router-tunnel-bind-address.*must be a loopback address/,
      );
    expect(() => parse(['--router-tunnel-bind-address', '127.0.0.1:8080'])).toThrow(
      '--router-tunnel-bind-address needs --router-bind-address',
    );
    for (const router of [':8080', '0.0.0.0:8080', '[::]:8080'])
      expect(() => parse(['--router-bind-address', router, '--router-tunnel-bind-address', '127.0.0.1:8080'])).toThrow(
        `--router-tunnel-bind-address 127.0.0.1:8080 shares its port with --router-bind-address ${router}, which listens on every interface`,
      );
  });

  it('refuse an authentication mode other than kubernetes or none, naming the flag', () => {
    expect(() => parse(['--router-bind-address', ':8080', '--router-authentication', 'open'])).toThrow('--router-authentication');
    expect(() => parse(['--router-bind-address', 'localhost'])).toThrow('--router-bind-address');
  });
});
