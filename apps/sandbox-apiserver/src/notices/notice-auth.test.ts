import type { UserInfo } from '@sandbox-scale/kube-runtime';
import { decideNotice, NODE_NAME_EXTRA, nodeOfCaller } from './notice-auth';

const PUBLISHER = 'system:serviceaccount:sandbox-system:sandbox-scale-inventory-publisher';
const user = (username: string, nodes?: string[]): UserInfo => ({
  username,
  groups: ['system:serviceaccounts'],
  extra: nodes === undefined ? {} : { [NODE_NAME_EXTRA]: nodes },
});

describe('decideNotice', () => {
  it('allows the publisher ServiceAccount for the node its token is bound to', () => {
    expect(decideNotice(user(PUBLISHER, ['n1']), PUBLISHER, 'n1')).toEqual({ allowed: true });
  });

  it('refuses another node than the one in the token', () => {
    const d = decideNotice(user(PUBLISHER, ['n1']), PUBLISHER, 'n2');
    expect(d).toEqual({ allowed: false, reason: 'a publisher on node "n1" cannot tell of node "n2"' });
  });

  it('fails closed without exactly one node in the token', () => {
    for (const nodes of [undefined, [], [''], ['n1', 'n2']])
      expect(decideNotice(user(PUBLISHER, nodes), PUBLISHER, 'n1').allowed).toBe(false);
    expect(nodeOfCaller(user(PUBLISHER, ['n1', 'n1']))).toBeUndefined();
  });

  it('refuses any other identity, and everyone when no publisher is configured', () => {
    expect(decideNotice(user('system:serviceaccount:sandbox-system:other', ['n1']), PUBLISHER, 'n1').allowed).toBe(false);
    expect(decideNotice(user('system:node:n1', ['n1']), PUBLISHER, 'n1').allowed).toBe(false);
    expect(decideNotice(user('', ['n1']), '', 'n1').allowed).toBe(false);
  });
});
