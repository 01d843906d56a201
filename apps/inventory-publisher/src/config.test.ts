import { parseFlags } from '@sandbox-scale/kube-runtime';
import { advertiseAddressOf, InventoryPublisherFlagsSchema, noticeTargetOfFlags, publisherConfigFromFlags } from './config';
import { readFleetToken } from '@sandbox-scale/kube-runtime';

const parse = (argv: string[]) => {
  const r = parseFlags(InventoryPublisherFlagsSchema, { program: 'p', summary: 's', argv, env: {} });
  if ('help' in r) throw new Error('help');
  return r;
};

describe('publisher configuration', () => {
  it("defaults the advertise address to the sandboxd URL's host:port", () => {
    expect(advertiseAddressOf('http://10.0.0.5:7777/')).toBe('10.0.0.5:7777');
    expect(advertiseAddressOf('sandboxd.local')).toBe('sandboxd.local:80');
    expect(advertiseAddressOf('http://[::1]:7777')).toBe('[::1]:7777');
  });

  it('reads the flags: interval as ms, labels as a map, token from env', () => {
    const flags = parse([
      '--node-name',
      'n1',
      '--sandboxd-url=http://127.0.0.1:9000',
      '--publish-interval=5s',
      '--inventory-labels',
      'fleet=a,zone=z1',
    ]);
    const cfg = publisherConfigFromFlags(flags, readFleetToken(flags.fleetTokenFile, { SANDBOX_SCALE_FLEET_TOKEN: ' tok \n' }));
    expect(cfg).toEqual({
      nodeName: 'n1',
      sandboxdUrl: 'http://127.0.0.1:9000',
      advertiseAddress: '127.0.0.1:9000',
      publishIntervalMs: 5000,
      labels: { fleet: 'a', zone: 'z1' },
      fleetToken: 'tok',
      noticeIntervalMs: 250,
    });
  });

  it('reads the notice target: off without --notice-service, a CA required with it', () => {
    const read = (path: string): string => `pem of ${path}`;
    expect(noticeTargetOfFlags(parse(['--node-name=n1']), read)).toBeUndefined();
    expect(() => noticeTargetOfFlags(parse(['--node-name=n1', '--notice-service=sandbox-system/sandbox-apiserver']), read)).toThrow(
      /required with --notice-service/,
    );
    const flags = parse([
      '--node-name=n1',
      '--notice-service=sandbox-system/sandbox-apiserver',
      '--notice-ca-file=/ca.crt',
      '--notice-interval=100ms',
    ]);
    expect(noticeTargetOfFlags(flags, read)).toEqual({
      service: { namespace: 'sandbox-system', name: 'sandbox-apiserver' },
      caPem: 'pem of /ca.crt',
      caFile: '/ca.crt',
    });
    expect(publisherConfigFromFlags(flags, '').noticeIntervalMs).toBe(100);
    expect(() => parse(['--node-name=n1', '--notice-service=just-a-name'])).toThrow(/--notice-service: must be <namespace>\/<name>/);
  });

  it('takes the notice CA from an APIService instead of a file, never from both', () => {
    const read = (path: string): string => `pem of ${path}`;
    const service = '--notice-service=sandbox-system/sandbox-apiserver';
    expect(noticeTargetOfFlags(parse(['--node-name=n1', service, '--notice-ca-apiservice=v1beta1.agents.x-k8s.io']), read)).toEqual({
      service: { namespace: 'sandbox-system', name: 'sandbox-apiserver' },
      caApiService: 'v1beta1.agents.x-k8s.io',
    });
    expect(() =>
      noticeTargetOfFlags(
        parse(['--node-name=n1', service, '--notice-ca-file=/ca.crt', '--notice-ca-apiservice=v1beta1.agents.x-k8s.io']),
        read,
      ),
    ).toThrow(/exclusive/);
    expect(() => parse(['--node-name=n1', '--notice-ca-apiservice=../secrets'])).toThrow(
      /--notice-ca-apiservice: must be an APIService name/,
    );
  });

  it('names the flag when node name is missing or labels are malformed', () => {
    expect(() => parse([])).toThrow(/--node-name: is required/);
    expect(() => parse(['--node-name=n', '--inventory-labels=oops'])).toThrow(/--inventory-labels/);
  });
});
