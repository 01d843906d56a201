import { KnownNodeAddresses } from './addresses';

const inv = (node: string, address: string, stale = false) => ({
  metadata: { name: node },
  node,
  address,
  ...(stale ? { conditions: [{ type: 'Stale', status: 'True' }] } : {}),
});

describe('KnownNodeAddresses', () => {
  it('allows exactly the addresses known, non-stale inventories advertise, in any spelling of them', () => {
    let list: readonly ReturnType<typeof inv>[] = [
      inv('a', '10.0.0.1:7777'),
      inv('b', 'http://10.0.0.2:7777/'),
      inv('s', '10.0.0.3:7777', true),
    ];
    const known = new KnownNodeAddresses(() => list);
    expect(known.check('10.0.0.1:7777')).toEqual({ node: 'a' });
    expect(known.check('http://10.0.0.1:7777')).toEqual({ node: 'a' });
    expect(known.check('10.0.0.2:7777')).toEqual({ node: 'b' });
    expect(known.check('10.0.0.3:7777')).toEqual({ refused: 'stale' });
    for (const other of ['10.0.0.9:7777', 'http://evil.example//10.0.0.1:7777', 'https://10.0.0.1:7777', '10.0.0.1:77770', '', '  '])
      expect(known.check(other)).toEqual({ refused: 'unknown' });
    // a new list is read again: the node that left is unknown, the one that turned Stale refused
    list = [inv('b', '10.0.0.2:7777', true)];
    expect(known.check('10.0.0.1:7777')).toEqual({ refused: 'unknown' });
    expect(known.check('10.0.0.2:7777')).toEqual({ refused: 'stale' });
  });

  it('trusts no one with an address two inventories claim', () => {
    const known = new KnownNodeAddresses(() => [inv('a', '10.0.0.1:7777'), inv('mallory', '10.0.0.1:7777')]);
    expect(known.check('10.0.0.1:7777')).toEqual({ refused: 'ambiguous' });
  });
});
