import { inspect } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { Sandbox } from './sandbox';

describe('Sandbox handle', () => {
  it('never shows its token when printed, logged or serialised', () => {
    const sb = new Sandbox(new KubeConfig(), {
      name: 'agent-1',
      namespace: 'team',
      node: 'n1',
      address: '10.0.0.1:7000',
      token: 'tok-secret-value',
      claimName: 'agent-1',
      claimId: 'sb_1',
      via: 'fast',
    });
    expect(sb.token).toBe('tok-secret-value');
    expect(JSON.stringify(sb)).toBe(
      '{"name":"agent-1","namespace":"team","node":"n1","address":"10.0.0.1:7000","via":"fast","claimName":"agent-1","claimId":"sb_1"}',
    );
    expect(inspect(sb)).not.toContain('tok-secret-value');
    expect(inspect(sb)).toContain("name: 'agent-1'");
  });
});
